"""Hypothesis: JSON shaped like requests yields a Conversation or a 400 that names the path.

Why: SPEC I1/I11 — whatever a client sends, the answer is never a 5xx, every refusal names
the JSON path it is about, and no error message floods the client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.requests import (
    NormalizeOptions,
    RequestLimits,
    Sealer,
    decode_request,
    normalize,
    referenced_ids,
    response_echo,
)
from accord.adapters.templates import PromptRenderer
from accord.errors import RequestError

SEALER = Sealer.from_secret("property-tests")
PLAIN = PromptRenderer.plain()
GLM = PromptRenderer.from_files(Path(__file__).parent.parent / "templates" / "glm_style.jinja")
LIMITS = RequestLimits(max_input_items=8, max_tools=6, max_string_chars=200)

leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
any_json = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
text = st.text(max_size=16) | st.sampled_from(
    ["", "{}", '{"a": 1}', "[1]", "gAAAAABn3Xk9QwZ0rT5yL2mN8pQ4sV7uW1xY3zA6bC9"]
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the plausible value, sometimes any JSON at all in its place."""
    return st.integers(0, 11).flatmap(lambda n: any_json if n == 0 else strategy)


PART_TYPES = [
    "input_text",
    "output_text",
    "refusal",
    "input_image",
    "input_file",
    "input_audio",
    "encrypted_content",
    "text",
    "bogus",
]
part = st.fixed_dictionaries(
    {"type": st.sampled_from(PART_TYPES)},
    optional={
        "text": maybe(text),
        "refusal": maybe(text),
        "image_url": maybe(text),
        "encrypted_content": maybe(text),
        "filename": maybe(text),
        "detail": maybe(st.sampled_from(["auto", "low"])),
    },
)
content = maybe(text | st.lists(part, max_size=3))

function_tool = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["function", "custom"]),
        "name": maybe(st.sampled_from(["f", "g", "apply_patch"])),
    },
    optional={
        "parameters": maybe(st.just({"type": "object"})),
        "description": maybe(text),
        "format": maybe(
            st.sampled_from([{"type": "text"}, {"type": "grammar", "syntax": "lark", "definition": "x"}])
        ),
    },
)
TOOL_TYPES = [
    "function",
    "custom",
    "namespace",
    "tool_search",
    "web_search",
    "web_search_preview",
    "file_search",
    "mcp",
    "bogus",
]
tool = function_tool | st.fixed_dictionaries(
    {"type": st.sampled_from(TOOL_TYPES)},
    optional={
        "name": maybe(st.sampled_from(["ns", "f"])),
        "tools": maybe(st.lists(function_tool, max_size=2)),
        "external_web_access": maybe(st.booleans()),
        "execution": maybe(st.sampled_from(["client", "server"])),
    },
)

ITEM_TYPES = [
    "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "reasoning", "item_reference", "compaction", "compaction_trigger", "additional_tools", "tool_search_call",
    "tool_search_output", "web_search_call", "shell_call", "mcp_call", "bogus",
]  # fmt: skip
call_ids = st.sampled_from(["c1", "c2", "c3"])
names = st.sampled_from(["f", "g", "apply_patch", "ns.f"])
summary = st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": text}), max_size=2)
reasoning_content = st.none() | st.lists(
    st.fixed_dictionaries({"type": st.just("reasoning_text"), "text": text}), max_size=2
)
encrypted = text | st.just(SEALER.seal("sealed reasoning"))


def typed(kind: str, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    optional = {} if "id" in fields else {"id": st.sampled_from(["r1", "x"])}
    return st.fixed_dictionaries({"type": st.just(kind), **fields}, optional=optional)


# Items with their required fields, so most examples reach normalisation.
valid_item = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "system", "developer"]),
            "content": text | st.lists(part, max_size=3),
        },
        optional={"type": st.just("message"), "phase": st.just("commentary")},
    ),
    typed("function_call", call_id=call_ids, name=names, arguments=text),
    typed("custom_tool_call", call_id=call_ids, name=names, input=text),
    typed("function_call_output", call_id=call_ids, output=text | st.lists(part, max_size=2)),
    typed("custom_tool_call_output", call_id=call_ids, output=text | st.lists(part, max_size=2)),
    typed("reasoning", summary=summary, content=reasoning_content, encrypted_content=st.none() | encrypted),
    typed("item_reference", id=st.sampled_from(["r1", "r2", "r3"])),
    typed("compaction", encrypted_content=encrypted),
    typed("compaction_trigger"),
    typed("additional_tools", tools=st.lists(function_tool, max_size=2)),
    typed("tool_search_call", call_id=call_ids, arguments=any_json),
    typed("tool_search_output", call_id=call_ids, tools=st.lists(function_tool, max_size=2)),
    typed("web_search_call"),
)
# Items of any type with any of the fields, some of them wrong.
loose_item = st.fixed_dictionaries(
    {"type": st.sampled_from(ITEM_TYPES)},
    optional={
        "id": maybe(st.sampled_from(["r1", "r2", "msg_1"])),
        "call_id": maybe(call_ids),
        "name": maybe(names),
        "arguments": maybe(text),
        "output": content,
        "summary": maybe(summary),
        "content": maybe(reasoning_content),
        "encrypted_content": maybe(encrypted),
        "tools": maybe(st.lists(tool, max_size=2)),
    },
)
item = st.integers(0, 9).flatmap(lambda n: loose_item if n == 0 else any_json if n == 1 else valid_item)
tool_choice = maybe(
    st.sampled_from(["auto", "none", "required", "bogus"])
    | st.fixed_dictionaries({"type": st.sampled_from(["function", "custom", "file_search"]), "name": text})
    | st.fixed_dictionaries(
        {
            "type": st.just("allowed_tools"),
            "mode": st.sampled_from(["auto", "required"]),
            "tools": st.lists(function_tool, max_size=2),
        }
    )
)
request = st.fixed_dictionaries(
    {"input": maybe(text | st.lists(item, min_size=1, max_size=6))},
    optional={
        "tools": maybe(st.lists(tool, max_size=4)),
        "tool_choice": tool_choice,
        "instructions": maybe(text),
        "reasoning": maybe(
            st.fixed_dictionaries({}, optional={"effort": maybe(st.sampled_from(["none", "high"]))})
        ),
        "text": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "format": maybe(
                        st.just({"type": "json_schema", "name": "o", "schema": {}})
                        | st.just({"type": "text"})
                    )
                },
            )
        ),
        "temperature": maybe(st.floats(-1, 3)),
        "max_output_tokens": maybe(st.integers(-5, 10**20)),
        "metadata": maybe(st.dictionaries(text, text, max_size=3)),
        "include": maybe(st.lists(st.sampled_from(["reasoning.encrypted_content", "x"]), max_size=2)),
        "parallel_tool_calls": maybe(st.booleans()),
        "previous_response_id": maybe(text),
        "prompt": maybe(st.none() | st.just({"id": "p"})),
    },
)


def _check(error: RequestError) -> None:
    assert error.status == 400
    assert error.param, f"refusal without a path: {error.message}"
    assert len(error.message) <= 4000


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=request,
    vision=st.booleans(),
    drop=st.booleans(),
    refs=st.dictionaries(st.sampled_from(["r1", "r2"]), item, max_size=2),
)
def test_request_shaped_json_never_raises_anything_but_a_located_400(
    body: dict[str, Any], vision: bool, drop: bool, refs: dict[str, Any]
) -> None:
    try:
        req = decode_request(json.dumps(body).encode(), LIMITS)
    except RequestError as exc:
        _check(exc)
        return
    response_echo(req)
    referenced_ids(req)
    options = NormalizeOptions(
        web_search="drop" if drop else "refuse", vision=vision, sealer=SEALER, references=refs
    )
    try:
        conv = normalize(req, options=options)
    except RequestError as exc:
        _check(exc)
        return
    assert conv.messages
    PLAIN.render(conv)
    try:
        GLM.render(conv)
    except RequestError as exc:
        _check(exc)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | any_json.map(lambda v: json.dumps(v).encode()))
def test_arbitrary_bytes_are_a_400_or_a_request(raw: bytes) -> None:
    try:
        decode_request(raw, LIMITS)
    except RequestError as exc:
        assert exc.status == 400 and len(exc.message) <= 4000
