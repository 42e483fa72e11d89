"""Optional parts attached to the app by settings: completions, store, traces (each in its own module)."""

from __future__ import annotations

from accord.adapters.http.app import AccordApp
from accord.adapters.http.completions import attach_completions
from accord.adapters.store import attach_store
from accord.config import Settings
from accord.replay.trace import attach_traces


def attach_extensions(app: AccordApp, settings: Settings) -> None:
    """Attach what the settings ask for. Each part registers its routes and hooks itself."""
    attach_completions(app)
    attach_store(app, settings)
    attach_traces(app, settings)
