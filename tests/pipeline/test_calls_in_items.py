"""Calls through the items and the log: a completed response holds only completed, valid calls.

SPEC P4 and W1-W3 for the JSON-argument families: a call's item is added, given its
arguments and closed ``completed`` in the one step its closer arrives; a call whose
arguments never become valid JSON is message text, in every chunking; an output cut inside
a call is text in an ``incomplete`` response. No response, completed or not, holds a call
item whose status is not ``completed``.
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
from accord.events.response import Opened, ResponseEvent, fold
from accord.events.wire import EventLog, WireEvent
from accord.pipeline.items import ItemTracker
from accord.pipeline.parse import End, ParseStage
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import ResponseRun
from accord.pipeline.segments import ParsedSegment, ToolCall
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


def _calls(final: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i["arguments"], i["status"]) for i in final["output"] if i["type"] == "function_call"]


def test_long_call_is_added_and_done_in_the_step_of_its_closer() -> None:
    """A 50 KB argument fed 4 characters at a time: nothing of the call goes out before its closer."""
    args = json.dumps({"input": PATCH})
    text = "On it. " + WEATHER.replace("get_weather", "free_form").format(args=args)
    assert len(args) > 50_000
    steps, log = _stepwise(text, 4)
    closer_step = (len(text) - 1) // 4
    call_steps = [
        i for i, wire in enumerate(steps) for w in wire if w["type"].startswith("response.function_call")
    ]
    added = [
        i
        for i, wire in enumerate(steps)
        for w in wire
        if w["type"] == "response.output_item.added" and w["item"]["type"] == "function_call"
    ]
    assert added == [closer_step]
    assert set(call_steps) == {closer_step}
    done = [w for wire in steps for w in wire if w["type"] == "response.function_call_arguments.done"]
    assert [d["arguments"] for d in done] == [args]
    call = log.snapshot.output()[1]
    assert msgspec.to_builtins(call)["status"] == "completed"


def test_stream_of_calls_folds_to_the_completed_body() -> None:
    """W3 for small chunks: the SDK accumulator and the client fold both equal response.completed."""
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


def test_restarted_call_is_text_then_the_restart_is_a_call() -> None:
    """P4/P7: the cut call is text up to the restart, which is a completed call; nothing is lost."""
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    text = "Checking. " + cut + WEATHER.format(args='{"city": "Rome"}') + " Done."
    final = check_stream(_run(text))
    assert final["status"] == "completed"
    out = final["output"]
    assert [(i["type"], i["status"]) for i in out] == [
        ("message", "completed"),
        ("function_call", "completed"),
        ("message", "completed"),
    ]
    assert out[0]["content"][0]["text"] == "Checking. " + cut
    assert out[1]["arguments"] == '{"city": "Rome"}'
    assert out[2]["content"][0]["text"] == " Done."


@pytest.mark.parametrize(
    "args",
    ['{"city": Paris}', '{"city": "Paris"', '{"city": "Paris",}', '{"city": "Paris"}}', '{"ratio": nan}'],
)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_broken_call_in_a_completed_response_is_message_text(args: str, size: int) -> None:
    """P4: a call whose arguments never become valid before its closer is released as text."""
    text = "Checking. " + WEATHER.format(args=args) + " Done."
    events = _run(text, size=size)
    final = check_stream(events)
    assert final["status"] == "completed"
    assert [i["type"] for i in final["output"]] == ["message"]
    assert final["output"][0]["content"][0]["text"] == text
    assert not any(e["type"].startswith("response.function_call") for e in events)


def test_token_budget_inside_a_call_ends_the_response_incomplete_with_the_cut_call_as_text() -> None:
    """W5: the complete call before the cut is kept; the one being written is text, no call item."""
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    text = WEATHER.format(args='{"city": "Rome"}') + cut
    final = check_stream(_run(text, finish="length"))
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert _calls(final) == [('{"city": "Rome"}', "completed")]
    assert final["output"][-1]["content"][0]["text"] == cut


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


def test_custom_tool_call_reports_its_decoded_input() -> None:
    """P10: a custom tool's input is the string decoded from the arguments."""
    args = '{"input": "*** Begin Patch\\n*** End Patch"}'
    item = msgspec.to_builtins(fold(_tracked([ToolCall(name="apply_patch", arguments=args)])).output()[0])
    assert (item["type"], item["input"], item["status"]) == (
        "custom_tool_call",
        "*** Begin Patch\n*** End Patch",
        "completed",
    )


def test_only_the_first_call_is_reported_when_parallel_calls_are_off() -> None:
    """P9: later calls are released as text."""
    second = ToolCall(name="get_weather", arguments='{"city": "Rome"}')
    events = _tracked([ToolCall(name="get_time", arguments="{}"), second], parallel=False)
    output = [msgspec.to_builtins(i) for i in fold(events).output()]
    assert [i["type"] for i in output] == ["function_call", "message"]
    assert json.loads(output[1]["content"][0]["text"]) == {
        "name": "get_weather",
        "arguments": {"city": "Rome"},
    }


def test_a_broken_call_does_not_use_up_the_one_call() -> None:
    """P9 counts reported calls: after a broken first call the next complete one is still a call."""
    text = WEATHER.format(args='{"city": "Par') + WEATHER.format(args='{"city": "Rome"}')
    final = check_stream(_run(text, parallel=False))
    assert [(i["type"], i["status"]) for i in final["output"]] == [
        ("message", "completed"),
        ("function_call", "completed"),
    ]


def test_parallel_calls_off_through_the_chain() -> None:
    """P9 end to end: one call item, the second call as message text, folds agree."""
    text = WEATHER.format(args='{"city": "Paris"}') + WEATHER.format(args='{"city": "Rome"}')
    final = check_stream(_run(text, parallel=False))
    assert [i["type"] for i in final["output"]] == ["function_call", "message"]


def test_a_segment_of_no_known_kind_is_a_protocol_violation() -> None:
    """A stage that hands the tracker something that is not a segment is a bug, reported as one."""
    with pytest.raises(ProtocolViolation):
        _tracked(["not a segment"])  # type: ignore[list-item]
