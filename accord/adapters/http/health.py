"""``/health`` (liveness) and ``/ready`` (readiness), SPEC H1.

``/health`` answers whether the process serves at all: 200 ``ok``, or 503 ``draining`` once
a shutdown began, so that a load balancer stops sending work. ``/ready`` answers whether a
request would be served now: the engine is loaded (it is, once the app exists: the
composition root builds it first) and, for an engine that declares a ``readiness`` check in
its capabilities (one with upstreams: every pool has one not marked down), that check
passes; its report is passed through.
"""

from __future__ import annotations

from typing import Any

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange
from accord.engine.protocol import Engine


async def health(ctx: Context, ex: Exchange) -> None:
    draining = ctx.runner.lifecycle.draining
    await ex.json(503 if draining else 200, {"status": "draining" if draining else "ok"})


async def engine_readiness(engine: Engine) -> dict[str, Any]:
    """The engine's own report where it declares a readiness check; else ready (it is loaded)."""
    readiness = engine.capabilities.readiness
    if readiness is None:
        return {"ready": True}
    return dict(await readiness())


async def ready(ctx: Context, ex: Exchange) -> None:
    report = await engine_readiness(ctx.service.engine)
    draining = ctx.runner.lifecycle.draining
    ok = bool(report.get("ready")) and not draining
    status = "ready" if ok else ("draining" if draining else "not_ready")
    await ex.json(200 if ok else 503, {**report, "ready": ok, "status": status})
