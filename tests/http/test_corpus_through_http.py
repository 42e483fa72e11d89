"""Every parser corpus row through the HTTP app (issue 3 acceptance).

For each row of every packaged corpus table, the scripted engine writes the row's output
in small chunks; the streamed events folded by the openai SDK accumulator and by a
client-side fold equal the ``response.completed`` body, that body equals the non-streamed
one, and its items are what the row's expected segments become (ids aside).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.events.generation import Finished
from accord.events.response import Opened, fold
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import End
from accord.pipeline.segments import ToolSpec
from accord.replay.parser_fuzz import CorpusRow, load_corpus
from tests.oracle import check_stream
from tests.serving import parse_sse, scripted_settings, write_script

ROWS = [row for file in load_corpus() for row in file.rows if row.expect is not None]


def _request_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    plain: list[dict[str, Any]] = []
    spaces: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        if spec.kind == "custom":
            tool: dict[str, Any] = {"type": "custom", "name": spec.bare_name}
            if spec.description:
                tool["description"] = spec.description
        else:
            tool = {
                "type": "function",
                "name": spec.bare_name,
                "parameters": spec.parameters or {"type": "object", "properties": {}},
            }
        if spec.namespace:
            spaces.setdefault(spec.namespace, []).append(tool)
        else:
            plain.append(tool)
    plain += [
        {"type": "namespace", "name": ns, "description": ns, "tools": tools} for ns, tools in spaces.items()
    ]
    return plain


def _expected_output(row: CorpusRow) -> list[dict[str, Any]]:
    counter = itertools.count()
    tracker = ItemTracker(new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 0, tools=row.tools)
    events = [Opened(response_id="r", created_at=0, model="m")]
    for seg in row.expect or ():
        events += tracker.feed(seg)
    events += tracker.feed(
        End(outcome=Finished(reason="stop", prompt_tokens=0), output_tokens=0, reasoning_tokens=0)
    )
    return [msgspec.to_builtins(item) for item in fold(events).output()]


def _anonymise(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace minted ids with their position, so two runs compare item for item."""
    out = []
    for n, item in enumerate(items):
        item = dict(item)
        item["id"] = f"id{n}"
        if "call_id" in item and str(item["call_id"]).startswith("call_"):
            item["call_id"] = f"call{n}"
        out.append(item)
    return out


async def _both(app: AccordApp, body: dict[str, Any]) -> tuple[httpx.Response, httpx.Response]:
    """The same request streamed and not, in one event loop (the app lives in one loop)."""
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as client:
        streamed = await client.post("/v1/responses", json={**body, "stream": True})
        plain = await client.post("/v1/responses", json=body)
        return streamed, plain


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.stage}/{r.parser}/{r.name}" for r in ROWS])
def test_row_streams_and_folds_to_its_expectation(tmp_path: Path, row: CorpusRow) -> None:
    script = write_script(tmp_path, [{"output": row.output, "chunk_chars": 3}])
    settings = scripted_settings(
        script,
        reasoning_parser=row.parser if row.stage == "reasoning" else "none",
        tool_parser=row.parser if row.stage == "tools" else "none",
    )
    app = build_app(settings)
    body: dict[str, Any] = {"model": "m", "input": "go"}
    if row.tools:
        body["tools"] = _request_tools(row.tools)
    if row.thinking is not None:
        body["reasoning"] = {"effort": "medium" if row.thinking else "none"}
    streamed, plain = anyio.run(_both, app, body)
    assert streamed.status_code == 200, streamed.text
    events = parse_sse(streamed.content)
    final = check_stream(events)
    assert plain.status_code == 200, plain.text
    assert _anonymise(plain.json()["output"]) == _anonymise(final["output"])
    assert _anonymise(final["output"]) == _anonymise(_expected_output(row)), json.dumps(final["output"])[
        :2000
    ]
