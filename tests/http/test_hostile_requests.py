"""Hostile and random request bodies never produce a 5xx (SPEC I1, I11, I12).

Runs the ASGI app in-process (no socket) so Hypothesis can try many bodies quickly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from tests.serving import scripted_settings, write_script

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
item_types = st.sampled_from(
    [
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "reasoning",
        "item_reference",
        "compaction",
        "web_search_call",
        "nonsense",
        "input_text",
    ]
)
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool", "robot"])
items = st.fixed_dictionaries(
    {},
    optional={
        "type": item_types,
        "role": roles,
        "content": st.one_of(st.text(max_size=30), st.lists(json_value, max_size=3), json_leaf),
        "call_id": st.one_of(st.text(max_size=8), st.integers()),
        "output": json_value,
        "arguments": st.one_of(st.text(max_size=20), json_value),
        "name": st.text(max_size=10),
        "id": st.text(max_size=10),
    },
)
tools = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["function", "custom", "namespace", "web_search", "file_search", "mcp", "bogus"]
        )
    },
    optional={
        "name": st.text(max_size=10),
        "parameters": json_value,
        "tools": st.lists(json_value, max_size=2),
    },
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": st.one_of(st.text(max_size=10), json_leaf),
        "input": st.one_of(st.text(max_size=50), st.lists(items, max_size=5), json_value),
        "instructions": st.one_of(st.text(max_size=20), json_value),
        "tools": st.one_of(st.lists(tools, max_size=3), json_value),
        "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required"]), json_value),
        "temperature": json_leaf,
        "max_output_tokens": json_leaf,
        "stream": st.booleans(),
        "store": json_leaf,
        "reasoning": json_value,
        "text": json_value,
        "metadata": json_value,
        "include": json_value,
    },
)


def _app(tmp: Path) -> AccordApp:
    script = write_script(tmp, [{"output": "ok"}])
    s = scripted_settings(script, max_body_bytes=100_000)
    return build_app(s)


async def _post(app: AccordApp, content: bytes) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        return await client.post(
            "/v1/responses", content=content, headers={"content-type": "application/json"}
        )


def _check(resp: httpx.Response) -> dict[str, Any] | None:
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        assert len(resp.content) <= 4096
        err = resp.json()["error"]
        assert isinstance(err["message"], str) and err["message"]
        return dict(err)
    return None


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(body=bodies)
def test_request_shaped_json_never_5xx(tmp_path: Path, body: dict[str, Any]) -> None:
    app = _app(tmp_path)
    _check(anyio.run(_post, app, json.dumps(body).encode()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_never_5xx(tmp_path: Path, raw: bytes) -> None:
    app = _app(tmp_path)
    _check(anyio.run(_post, app, raw))


def test_oversized_base64_image_error_stays_small(tmp_path: Path) -> None:
    """SPEC I11: a rejected huge value must not be echoed back in full."""
    app = _app(tmp_path)
    blob = "data:image/png;base64," + "A" * 60_000
    body = {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": blob, "detail": 7}]}]}
    resp = anyio.run(_post, app, json.dumps(body).encode())
    err = _check(resp)
    assert err is not None and len(resp.content) <= 4096
