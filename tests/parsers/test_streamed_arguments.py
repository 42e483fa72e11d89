"""JSON-argument calls stream their arguments while they grow, and are done only when valid (SPEC P3, P4).

The corpus tables fix what every output merges to under every chunking; these tests pin
*when* the pieces come out: arguments go out as they arrive (docs/model-formats.md B14 item 6), a
call is closed only by the text that completes it, and the formats that cannot stream
report their calls whole.
"""

from __future__ import annotations

import json

import pytest

from accord.pipeline.segments import (
    AbandonedCall,
    CallAbandoned,
    CallArguments,
    CallClosed,
    CallOpened,
    Content,
    ParsedSegment,
    ToolCall,
    merge_segments,
)
from tests.parsers.json_tool_helpers import parser, per_character

PATCH = "*** Begin Patch\n" + '+ a line with "quotes", <tags> and \\ slashes\n' * 1100 + "*** End Patch"
LONG_ARGS = json.dumps({"input": PATCH})
assert len(LONG_ARGS) > 50_000

DS_CB, DS_CE, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
K_CB, K_CE, K_ARG = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"

#: How each streaming family writes one call to ``name`` with ``args``.
WRITE = {
    "hermes": lambda name, args: f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>',
    "mistral": lambda name, args: f"[TOOL_CALLS]{name}[ARGS]{args}",
    "deepseek_v3": lambda name, args: f"{DS_CB}function{DS_SEP}{name}\n```json\n{args}\n```{DS_CE}",
    "deepseek_v31": lambda name, args: f"{DS_CB}{name}{DS_SEP}{args}{DS_CE}",
    "kimi_k2": lambda name, args: f"{K_CB}functions.{name}:0{K_ARG}{args}{K_CE}",
}


def _feed(name: str, chunks: list[str]) -> list[tuple[int, ParsedSegment]]:
    """(index of the chunk whose feed returned it, segment); ``finish`` counts as ``len(chunks)``."""
    p = parser(name)
    out: list[tuple[int, ParsedSegment]] = []
    for i, chunk in enumerate(chunks):
        out += [(i, seg) for seg in p.feed(chunk)]
    out += [(len(chunks), seg) for seg in p.finish()]
    return out


@pytest.mark.parametrize("name", sorted(WRITE))
def test_long_string_argument_streams_while_it_arrives(name: str) -> None:
    """A 50 KB patch fed 4 characters at a time goes out in many deltas, long before its call closes."""
    text = "Patching now. " + WRITE[name]("apply_patch", LONG_ARGS) + " Done."
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    out = _feed(name, chunks)
    deltas = [(i, s) for i, s in out if isinstance(s, CallArguments)]
    opened = [i for i, s in out if isinstance(s, CallOpened)]
    closed = [i for i, s in out if isinstance(s, CallClosed)]
    args_start = text.index(LONG_ARGS)
    args_end = args_start + len(LONG_ARGS)
    assert opened == [args_start // 4]
    assert len(deltas) > 1000
    assert deltas[0][0] == args_start // 4 < len(chunks) - 1
    # Nothing waits for the end: half the arguments are out by the time half of them arrived.
    half = args_start + len(LONG_ARGS) // 2
    assert sum(len(s.delta) for i, s in deltas if i <= half // 4) >= len(LONG_ARGS) // 2 - 8
    assert len(closed) == 1 and closed[0] >= (args_end - 1) // 4
    assert "".join(s.delta for _, s in deltas) == LONG_ARGS
    # ... and it is exactly the call the whole text reports.
    assert merge_segments([s for _, s in out]) == merge_segments(
        parser(name).feed(text) + parser(name).finish()
    )


@pytest.mark.parametrize("name", sorted(WRITE))
def test_call_is_opened_only_once_its_arguments_begin(name: str) -> None:
    """The item appears when the name is known and declared and the arguments' brace has arrived."""
    text = WRITE[name]("get_weather", '{"city": "Rome"}')
    out = per_character(name, text)
    opened = [i for i, s in out if isinstance(s, CallOpened)]
    assert opened == [text.index('{"city"')]
    first = next(s for _, s in out if isinstance(s, CallOpened))
    assert first.name == "get_weather"


@pytest.mark.parametrize("name", sorted(WRITE))
def test_undeclared_tool_never_opens_a_call(name: str) -> None:
    """Name repair decides before anything streams: prose about an unknown tool stays text (SPEC P6)."""
    text = WRITE[name]("launch_rocket", '{"x": 1}')
    out = per_character(name, text)
    assert not any(isinstance(s, CallOpened) for _, s in out)
    assert merge_segments([s for _, s in out]) == [Content(text=text)]


def test_quoted_marker_holds_the_rest_of_the_arguments_until_the_call_completes() -> None:
    """Text from a quoted opener on could be a restart: it goes out only once the call is valid."""
    args = json.dumps({"input": "before <tool_call> after " + "x" * 200})
    text = WRITE["hermes"]("apply_patch", args)
    out = per_character("hermes", text)
    deltas = [(i, s.delta) for i, s in out if isinstance(s, CallArguments)]
    marker = text.index("<tool_call>", 1)
    assert all(i < marker for i, _ in deltas[:-1])
    closed = next(i for i, s in out if isinstance(s, CallClosed))
    assert deltas[-1][0] == closed and deltas[-1][1].startswith("<tool_call> after ")
    assert "".join(d for _, d in deltas) == args


def test_a_delta_never_ends_inside_a_marker() -> None:
    """A chunk ending in ``<tool_ca`` holds those characters back until the next chunk decides them."""
    args = '{"input": "a <tool_cat> b"}'
    text = WRITE["hermes"]("apply_patch", args)
    cut = text.index("<tool_cat>") + len("<tool_ca")
    out = _feed("hermes", [text[:cut], text[cut:]])
    first_chunk = "".join(s.delta for i, s in out if isinstance(s, CallArguments) and i == 0)
    assert first_chunk == '{"input": "a '
    assert "".join(s.delta for _, s in out if isinstance(s, CallArguments)) == args


def test_restart_inside_the_arguments_abandons_the_call_and_parses_the_restart() -> None:
    """SPEC P7 with streaming: the abandoned call keeps what it streamed, the restart is a call."""
    cut = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    whole = WRITE["hermes"]("get_weather", '{"city": "Rome"}')
    out = [s for _, s in per_character("hermes", cut + whole)]
    assert isinstance(out[-1], CallClosed)
    assert sum(isinstance(s, CallAbandoned) for s in out) == 1
    assert merge_segments(out) == [
        AbandonedCall(name="get_weather", arguments='{"city": "Par'),
        ToolCall(name="get_weather", arguments='{"city": "Rome"}'),
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Rome"}}'),
        ("mistral", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome"}}]'),
        ("mistral", '[TOOL_CALLS]{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a1b2c3d4e"}'),
        ("hermes", '<tool_call>{"name": "get_weather", "parameters": {"city": "Rome"}}</tool_call>'),
        ("hermes", '<tool_call>{"arguments": {"city": "Rome"}, "name": "get_weather"}</tool_call>'),
        (
            "harmony",
            '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Rome"}<|call|>',
        ),
    ],
)
def test_formats_that_cannot_stream_report_the_call_whole(name: str, text: str) -> None:
    """Where the call is undecided until its end (Llama 3, Mistral pre-v11, other wrapper layouts,
    harmony messages handed over whole) the call comes as one ToolCall when it completes."""
    out = [s for _, s in per_character(name, text)]
    assert not any(isinstance(s, (CallOpened, CallArguments, CallClosed, CallAbandoned)) for s in out)
    assert [type(s) for s in out] == [ToolCall]
