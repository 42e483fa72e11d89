"""The service warns about a constraint only where its engine cannot apply it (EngineCapabilities)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from accord.adapters.build import build_service
from accord.adapters.requests import RequestLimits, decode_request
from accord.engine.protocol import EngineCapabilities
from accord.engine.scripted import ScriptedEngine, load_script
from tests.serving import scripted_settings, write_script

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
SCHEMA = {"type": "json_schema", "name": "out", "schema": {"type": "object"}}


class Constraining(ScriptedEngine):
    """The scripted engine, declaring that it enforces both kinds of constraint."""

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(json_schema=True, tool_calls=True)


def warnings(tmp_path: Path, body: dict[str, Any], *, constraining: bool) -> list[str]:
    settings = scripted_settings(write_script(tmp_path, []), tool_parser="hermes")
    assert settings.script is not None
    kind = Constraining if constraining else ScriptedEngine
    service = build_service(settings, engine=kind(load_script(settings.script)))
    request = decode_request(json.dumps({"model": "m", "input": "hi", **body}).encode(), RequestLimits())
    with capture_logs() as logs:
        anyio.run(service.prepare, request)
    return [str(e["event"]) for e in logs if e.get("log_level") == "warning"]


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({"tools": [TOOL], "tool_choice": "required"}, "tool_choice"),
        ({"text": {"format": SCHEMA}}, "text.format"),
    ],
)
def test_a_constraint_is_warned_about_only_where_the_engine_cannot_apply_it(
    tmp_path: Path, body: dict[str, Any], word: str
) -> None:
    assert any(word in w for w in warnings(tmp_path, body, constraining=False))
    assert warnings(tmp_path, body, constraining=True) == []
