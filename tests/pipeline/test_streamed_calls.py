"""Streamed calls through the items and the log: deltas while the arguments grow, done only when valid.

SPEC P4 and W1-W3 for calls whose arguments stream: ``function_call_arguments.delta`` goes
out while the model is still writing the arguments, the call is ``completed`` only with
complete valid JSON, an abandoned call ends ``incomplete`` with the text after it in a
message, and the things that cannot stream an item (custom tools, ``parallel_tool_calls:
false``) still report exactly what they reported whole.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import msgspec
import pytest

from accord.engine.protocol import GenerationRequest
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.errors import ProtocolViolation
from accord.events.generation import Chunk, Finished, GenerationOutput
from accord.events.response import ArgumentsAppended, Opened, ResponseEvent, fold
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.segments import (
    CallAbandoned,
    CallArguments,
    CallClosed,
    CallOpened,
    ParsedSegment,
    ToolCall,
)
from accord.pipeline.tools import tool_parser
from tests.oracle import check_stream
from tests.parsers.json_tool_helpers import OFFERED

OPENED = Opened(response_id="r", created_at=0, model="m")
PATCH = "*** Begin Patch\n" + '+ print("hello")\n' * 3000 + "*** End Patch"
WEATHER = '<tool_call>\n{{"name": "get_weather", "arguments": {args}}}\n</tool_call>'


def _stepwise(
    text: str, size: int, *, parallel: bool = True, reason: str = "stop"
) -> tuple[list[list[dict[str, Any]]], EventLog]:
    """Feed the parse stage, the tracker and the log one chunk at a time; the wire events of each."""
    counter = itertools.count()
    stage = ParseStage(reasoning_parser("none")(None), tool_parser("hermes")(OFFERED))
    tracker = ItemTracker(
        new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 0, tools=OFFERED, parallel_tool_calls=parallel
    )
    log = EventLog()
    log.append(OPENED)
    steps: list[list[dict[str, Any]]] = []
    events: list[GenerationOutput] = [Chunk(text=text[i : i + size]) for i in range(0, len(text), size)]
    events.append(Finished(reason=reason, prompt_tokens=1))  # type: ignore[arg-type]
    for event in events:
        wire: list[WireEvent] = []
        for seg in stage.feed(event):
            for response_event in tracker.feed(seg):
                wire += log.append(response_event)
        steps.append([msgspec.to_builtins(w) for w in wire])
    return steps, log


def _run(text: str, *, size: int = 3, parallel: bool = True, finish: str = "stop") -> list[dict[str, Any]]:
    """The whole chain (scripted engine, hermes parser), as a client receives it."""
    counter = itertools.count()
    run = ResponseRun(
        engine=ScriptedEngine(Script(rules=[Rule(output=text, chunk_chars=size, finish=finish)])),  # type: ignore[arg-type]
        request=GenerationRequest(prompt="p"),
        opened=OPENED,
        parse=ParseStage(reasoning_parser("none")(None), tool_parser("hermes")(OFFERED)),
        tracker=ItemTracker(
            new_id=lambda p: f"{p}_{next(counter)}",
            now=lambda: 0,
            tools=OFFERED,
            parallel_tool_calls=parallel,
        ),
        keepalive_interval=0,
    )
    out: list[WireEvent] = []

    async def emit(batch: list[WireEvent]) -> None:
        out.extend(batch)

    anyio.run(run.run, emit)
    return [msgspec.to_builtins(e) for e in out]


def test_long_argument_deltas_go_out_before_the_last_chunk() -> None:
    """B14 item 6: a 50 KB argument fed 4 characters at a time streams as it arrives, not at the end."""
    args = json.dumps({"input": PATCH})
    text = "On it. " + WEATHER.replace("get_weather", "free_form").format(args=args)
    assert len(args) > 50_000
    steps, log = _stepwise(text, 4)
    chunks = len(steps) - 1
    at = [
        i
        for i, wire in enumerate(steps)
        for w in wire
        if w["type"] == "response.function_call_arguments.delta"
    ]
    assert len(at) > 1000
    assert at[0] < chunks - 1
    assert at[len(at) // 2] < chunks // 2 + chunks // 8
    done = [w for wire in steps for w in wire if w["type"] == "response.function_call_arguments.done"]
    deltas = [
        w["delta"] for wire in steps for w in wire if w["type"] == "response.function_call_arguments.delta"
    ]
    assert [d["arguments"] for d in done] == ["".join(deltas)] == [args]
    call = log.snapshot.output()[1]
    assert msgspec.to_builtins(call)["status"] == "completed"


def test_stream_of_a_streamed_call_folds_to_the_completed_body() -> None:
    """W3 for many small deltas: the SDK accumulator and the client fold both equal response.completed."""
    text = (
        "Checking. "
        + WEATHER.format(args='{"city": "Paris", "days": 3}')
        + " Then: "
        + WEATHER.format(args='{"city": "Rome"}')
    )
    final = check_stream(_run(text, size=2))
    assert [(i["type"], i.get("arguments"), i["status"]) for i in final["output"]] == [
        ("message", None, "completed"),
        ("function_call", '{"city": "Paris", "days": 3}', "completed"),
        ("message", None, "completed"),
        ("function_call", '{"city": "Rome"}', "completed"),
    ]


def test_abandoned_call_ends_incomplete_and_the_text_after_it_is_kept() -> None:
    """P4/P7: a call whose arguments stop being JSON is never completed; nothing the model wrote is lost."""
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    text = "Checking. " + cut + WEATHER.format(args='{"city": "Rome"}') + " Done."
    events = _run(text)
    final = check_stream(events)
    assert final["status"] == "completed"
    out = final["output"]
    assert [(i["type"], i["status"]) for i in out] == [
        ("message", "completed"),
        ("function_call", "incomplete"),
        ("function_call", "completed"),
        ("message", "completed"),
    ]
    assert out[0]["content"][0]["text"] == "Checking. "
    assert out[1]["arguments"] == '{"city": "Par'
    assert out[2]["arguments"] == '{"city": "Rome"}'
    assert out[3]["content"][0]["text"] == " Done."
    streamed = "".join(e["delta"] for e in events if e.get("item_id") == out[1]["id"] and "delta" in e)
    assert streamed == '{"city": "Par'


def test_invalid_json_after_streaming_is_never_completed() -> None:
    """Arguments that stop being JSON end the call incomplete; the rest of the markup is message text."""
    text = WEATHER.format(args='{"city": Paris}')
    final = check_stream(_run(text))
    assert [(i["type"], i["status"]) for i in final["output"]] == [
        ("function_call", "incomplete"),
        ("message", "completed"),
    ]
    assert final["output"][0]["arguments"] == '{"city": '
    assert final["output"][1]["content"][0]["text"] == "Paris}}\n</tool_call>"


def test_token_budget_inside_streamed_arguments_ends_the_response_incomplete() -> None:
    """W5: the complete call before the cut is kept; the one being written ends incomplete."""
    text = (
        WEATHER.format(args='{"city": "Rome"}')
        + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    )
    final = check_stream(_run(text, finish="length"))
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    calls = [(i["arguments"], i["status"]) for i in final["output"] if i["type"] == "function_call"]
    assert calls == [('{"city": "Rome"}', "completed"), ('{"city": "Par', "incomplete")]


def _tracked(segments: list[ParsedSegment], *, parallel: bool = True) -> list[ResponseEvent]:
    counter = itertools.count()
    tracker = ItemTracker(
        new_id=lambda p: f"{p}_{next(counter)}", now=lambda: 0, tools=OFFERED, parallel_tool_calls=parallel
    )
    events: list[ResponseEvent] = [OPENED]
    for seg in segments:
        events += tracker.feed(seg)
    events += tracker.feed(
        End(outcome=Finished(reason="stop", prompt_tokens=0), output_tokens=0, reasoning_tokens=0)
    )
    return events


def _streamed(name: str, *deltas: str, ended: ParsedSegment | None = None) -> list[ParsedSegment]:
    return [CallOpened(name=name), *(CallArguments(delta=d) for d in deltas), ended or CallClosed()]


def test_custom_tool_call_is_reported_whole_as_it_always_was() -> None:
    """P10: the decoded input cannot stream simply, so the call's events are those of the whole call."""
    args = '{"input": "*** Begin Patch\\n*** End Patch"}'
    whole = _tracked([ToolCall(name="apply_patch", arguments=args)])
    streamed = _tracked(_streamed("apply_patch", args[:10], args[10:25], args[25:]))
    assert streamed == whole
    item = msgspec.to_builtins(fold(streamed).output()[0])
    assert (item["type"], item["input"], item["status"]) == (
        "custom_tool_call",
        "*** Begin Patch\n*** End Patch",
        "completed",
    )


def test_abandoned_custom_tool_call_ends_incomplete_with_what_it_wrote() -> None:
    """An unfinished custom call keeps its raw argument text (it cannot be decoded) and is not completed."""
    events = _tracked(_streamed("apply_patch", '{"input": "*** Be', ended=CallAbandoned()))
    item = msgspec.to_builtins(fold(events).output()[0])
    assert (item["type"], item["input"], item["status"]) == (
        "custom_tool_call",
        '{"input": "*** Be',
        "incomplete",
    )


def test_only_the_first_call_is_reported_when_parallel_calls_are_off() -> None:
    """P9: later calls are released as text, the same text a whole call gives; the first one streams."""
    second = ToolCall(name="get_weather", arguments='{"city": "Rome"}')
    whole = _tracked([ToolCall(name="get_time", arguments="{}"), second], parallel=False)
    streamed = _tracked(
        [*_streamed("get_time", "{", "}"), *_streamed("get_weather", '{"city": ', '"Rome"}')], parallel=False
    )
    output = [msgspec.to_builtins(i) for i in fold(streamed).output()]
    assert output == [msgspec.to_builtins(i) for i in fold(whole).output()]
    assert [i["type"] for i in output] == ["function_call", "message"]
    assert json.loads(output[1]["content"][0]["text"]) == {
        "name": "get_weather",
        "arguments": {"city": "Rome"},
    }
    # The first call streamed: one ArgumentsAppended per delta, where the whole call had one.
    assert [e.delta for e in streamed if isinstance(e, ArgumentsAppended)] == ["{", "}"]


def test_an_abandoned_call_does_not_use_up_the_one_call() -> None:
    """P9 counts reported calls: after an abandoned first call the next complete one is still a call."""
    events = _tracked(
        [*_streamed("get_weather", '{"city": "Par', ended=CallAbandoned()), *_streamed("get_time", "{}")],
        parallel=False,
    )
    output = [msgspec.to_builtins(i) for i in fold(events).output()]
    assert [(i["type"], i["status"]) for i in output] == [
        ("function_call", "incomplete"),
        ("function_call", "completed"),
    ]


def test_released_call_that_is_abandoned_is_text() -> None:
    """P9 and invariant 5: a later call that never completes is released as text too, nothing dropped."""
    events = _tracked(
        [*_streamed("get_time", "{}"), *_streamed("get_weather", '{"city": "Pa', ended=CallAbandoned())],
        parallel=False,
    )
    output = [msgspec.to_builtins(i) for i in fold(events).output()]
    assert [i["type"] for i in output] == ["function_call", "message"]
    assert output[1]["content"][0]["text"] == '{"name": "get_weather", "arguments": {"city": "Pa'


def test_parallel_calls_off_through_the_chain() -> None:
    """P9 end to end with streamed deltas: one call item, the second call as message text, folds agree."""
    text = WEATHER.format(args='{"city": "Paris"}') + WEATHER.format(args='{"city": "Rome"}')
    final = check_stream(_run(text, parallel=False))
    assert [i["type"] for i in final["output"]] == ["function_call", "message"]


@pytest.mark.parametrize(
    "segments",
    [
        [CallArguments(delta="{}")],
        [CallClosed()],
        [CallAbandoned()],
        [CallOpened(name="get_time"), CallOpened(name="get_time")],
    ],
)
def test_call_segments_out_of_order_are_a_protocol_violation(segments: list[ParsedSegment]) -> None:
    """A parser that breaks the opened-arguments-ended order is a bug, reported as one."""
    with pytest.raises(ProtocolViolation):
        _tracked(segments)
