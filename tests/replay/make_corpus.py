"""Writes the audit corpus in ``streams/``: clean streams in OpenAI's order and one stream per defect.

Run it from the repository root to regenerate after changing a builder
(``python -m tests.replay.make_corpus``); the files are
committed so that a reviewer can read each defect as bytes. ``streams_expected.json`` records, per file,
the defect codes the audit must report (exactly) and what the stream models.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.replay.builders import Event, StreamBuilder, number, to_sse

HERE = Path(__file__).parent / "streams"
CORPUS: dict[str, tuple[list[str], str]] = {}


def emit(name: str, events: list[Event] | str, codes: list[str], why: str) -> None:
    text = events if isinstance(events, str) else to_sse(events)
    (HERE / name).write_text(text, encoding="utf-8", newline="")
    CORPUS[name] = (sorted(codes), why)


def full() -> list[Event]:
    return (
        StreamBuilder()
        .reasoning(["Let me", " check the", " weather."])
        .message(["It is", " sunny", " in Paris."])
        .finish()
    )


def with_call() -> list[Event]:
    return (
        StreamBuilder()
        .reasoning(["The user wants", " the weather."])
        .function_call("get_weather", ['{"city"', ': "Paris"}'])
        .finish()
    )


def first(events: list[Event], kind: str, pred: Callable[[Event], bool] = lambda e: True) -> Event:
    return next(e for e in events if e["type"] == kind and pred(e))


def final(events: list[Event]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = first(events, "response.completed")["response"]["output"]
    return out


def without(events: list[Event], pred: Callable[[Event], bool]) -> list[Event]:
    return number([e for e in events if not pred(e)])


def clean() -> None:
    emit("clean_text.sse", StreamBuilder().message(["I", " am", " fine."]).finish(), [], "A5 (1) plain text")
    emit("clean_reasoning_message.sse", full(), [], "A5 (2) reasoning_text item, then a message")
    calls = (
        StreamBuilder()
        .reasoning(["Two cities."])
        .function_call("get_weather", ['{"city":', '"Paris"}'])
        .function_call("get_weather", ['{"city":', '"Rome"}'], item_id="fc_2", call_id="call_2")
        .finish()
    )
    emit("clean_function_calls.sse", calls, [], "A5 (3) reasoning then two function calls")
    custom = StreamBuilder().custom_call("apply_patch", ["*** Begin Patch\n", "*** End Patch\n"]).finish()
    emit("clean_custom_tool.sse", custom, [], "A5 (4) custom tool call")
    emit("clean_refusal.sse", StreamBuilder().refusal(["I can't", " help with that."]).finish(), [], "A5 (5)")
    inc = StreamBuilder().message(["Once", " upon a"]).finish("incomplete")
    emit("clean_incomplete.sse", inc, [], "A5 (6) response.incomplete, max_output_tokens")
    failed = StreamBuilder().message(["Partial"]).finish("failed")
    emit("clean_failed.sse", failed, [], "A5 (7) / W5: flat error, then response.failed")
    overflow = StreamBuilder().finish("failed", error_code="context_length_exceeded")
    emit("clean_context_length.sse", overflow, [], "W7: created, in_progress, error, failed numbered 0-3")
    ka = StreamBuilder().message(["Slow", " answer"]).finish()
    keep = copy.deepcopy(ka[1])
    ka.insert(3, keep)
    emit("clean_keepalive.sse", number(ka), [], "W8: response.in_progress repeated while silent")
    body = to_sse(full()).replace("\n", "\r\n")
    body = ": keepalive comment\r\n\r\n" + body.replace(
        "event: response.completed", ": comment\r\nevent: response.completed"
    )
    emit("clean_crlf_comments.sse", body, [], "CRLF line ends and SSE comments (tolerated by clients)")
    multi = "".join(
        f"event: {e['type']}\ndata: " + json.dumps(e, indent=1).replace("\n", "\ndata: ") + "\n\n"
        for e in full()
    )
    emit("clean_multiline_data.sse", multi, [], "one event's JSON split over several data: lines")
    curl_i = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n" + to_sse(
        full()
    )
    emit("clean_curl_i.txt", curl_i, [], "a curl -i -N capture: status line and headers before the body")
    emit(
        "clean_done_marker.sse",
        to_sse(full()) + "data: [DONE]\n\n",
        [],
        "a trailing [DONE] (the SDK ignores)",
    )
    inter = with_call()
    a = (
        StreamBuilder(rid="resp_1")
        .function_call("f", ['{"x":', "1}"])
        .function_call("g", ['{"y":', "2}"], item_id="fc_2", call_id="call_2")
        .finish()
    )
    # Interleave the two calls' deltas: both added first, then deltas alternate (the SDK accepts this).
    head, tail = a[:2], a[2:-1]
    c1 = [e for e in tail if e.get("output_index") == 0]
    c2 = [e for e in tail if e.get("output_index") == 1]
    inter = [*head, c1[0], c2[0], c1[1], c2[1], c1[2], c2[2], c1[3], c2[3], c1[4], c2[4], a[-1]]
    emit("clean_interleaved_calls.sse", number(inter), [], "parallel calls with interleaved argument deltas")
    summ = StreamBuilder().message(["Hi"], item_id="msg_2").finish()
    rs = {"id": "rs_s", "type": "reasoning", "summary": []}
    ref = {"item_id": "rs_s", "output_index": 0, "summary_index": 0}
    done = {**rs, "summary": [{"type": "summary_text", "text": "Thinking about it."}]}
    block = [
        {"type": "response.output_item.added", "output_index": 0, "item": rs},
        {
            "type": "response.reasoning_summary_part.added",
            **ref,
            "part": {"type": "summary_text", "text": ""},
        },
        {"type": "response.reasoning_summary_text.delta", **ref, "delta": "Thinking"},
        {"type": "response.reasoning_summary_text.delta", **ref, "delta": " about it."},
        {"type": "response.reasoning_summary_text.done", **ref, "text": "Thinking about it."},
        {
            "type": "response.reasoning_summary_part.done",
            **ref,
            "part": {"type": "summary_text", "text": "Thinking about it."},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]
    for e in summ[2:]:
        if "output_index" in e:
            e["output_index"] += 1
    summ[-1]["response"]["output"].insert(0, done)
    emit("clean_reasoning_summary.sse", number(summ[:2] + block + summ[2:]), [], "A5 (2) OpenAI summary form")


def defects() -> None:
    body = to_sse(full())
    cut = body.index("event: response.output_text.delta")
    emit(
        "bad_event.sse",
        body[:cut] + "data: {oops, not json\n\n" + body[cut:],
        ["bad_event"],
        "a data payload that is not JSON; the SDK raises",
    )
    emit(
        "unterminated_frame.sse",
        body[:-2],
        ["missing_terminal", "unterminated_frame"],
        "the body stops before the blank line after response.completed, so clients never see it",
    )

    ev = StreamBuilder().message(["Partial"]).finish("failed")
    err = first(ev, "error")
    err.pop("code"), err.pop("message"), err.pop("param")
    err["error"] = {"code": "unknown-error", "message": "Foobar", "param": None}
    emit(
        "error_nested.sse", ev, ["error_nested"], "A1: nested error object (prism fixture shape); SDK raises"
    )

    ev = full()
    for e in ev:
        e.pop("sequence_number")
    emit("sequence_missing.sse", ev, ["sequence_missing"], "no sequence_number at all")
    ev = full()
    for e in ev[5:]:
        e["sequence_number"] += 1
    emit("sequence_gap.sse", ev, ["sequence_gap"], "one number skipped")
    ev = full()
    for n, e in enumerate(ev[2:]):
        e["sequence_number"] = n
    emit("sequence_restart.sse", ev, ["sequence_restart"], "seed: 0,1,0,1,2,... with postprocess workers")

    emit(
        "first_not_created.sse",
        without(full(), lambda e: e["type"] == "response.created"),
        ["first_not_created"],
        "stream opens with response.in_progress; SDK raises",
    )
    ev = full()
    ev[-1]["response"]["id"] = "resp_other"
    emit(
        "lifecycle_id_changed.sse",
        ev,
        ["lifecycle_id_changed"],
        "completed names another response; SDK raises",
    )
    emit(
        "missing_terminal.sse",
        full()[:-1],
        ["missing_terminal"],
        "seed: 0.25-1.83% of streams stop without response.completed",
    )
    ev = full()
    ev.append(copy.deepcopy(ev[-1]))
    emit("multiple_terminal.sse", number(ev), ["multiple_terminal"], "response.completed sent twice")
    ev = full()
    ev.append(copy.deepcopy(ev[1]))
    emit("event_after_terminal.sse", number(ev), ["event_after_terminal"], "a keepalive after the terminal")
    ev = full()
    ev[-1]["response"]["status"] = "incomplete"
    emit(
        "terminal_status_mismatch.sse",
        ev,
        ["terminal_status_mismatch"],
        "vLLM: response.completed wrapped around status incomplete",
    )
    emit(
        "event_order.sse",
        without(full(), lambda e: e["type"] == "response.content_part.done" and e["item_id"] == "rs_1"),
        ["event_order"],
        "seed: content_part.done missing for reasoning parts",
    )
    ev = full()
    for e in ev:
        if e["type"].startswith("response.output_text."):
            e.pop("logprobs")
    emit("logprobs_missing.sse", ev, ["logprobs_missing"], "A2: a strict client raises without logprobs")

    ev = full()
    stray = {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_9",
        "output_index": 5,
        "delta": "{}",
    }
    ev.insert(-1, stray)
    emit(
        "content_before_item.sse", number(ev), ["content_before_item"], "A6 probe: fc delta to unknown index"
    )
    ev = full()
    dup = copy.deepcopy(first(ev, "response.output_item.added"))
    dup["item"]["id"] = "rs_dup"
    ev.insert(3, dup)
    emit("duplicate_output_index.sse", number(ev), ["duplicate_output_index"], "A6: duplicate output index")
    ev = full()
    bad = copy.deepcopy(first(ev, "response.output_text.delta"))
    bad.update(output_index=0, item_id="rs_1")
    ev.insert(5, bad)
    emit(
        "wrong_item_type.sse",
        number(ev),
        ["wrong_item_type"],
        "output_text.delta aimed at the reasoning item",
    )
    emit(
        "missing_content_part.sse",
        without(full(), lambda e: e["type"].startswith("response.content_part.") and e["item_id"] == "msg_1"),
        ["missing_content_part"],
        "A6 probe: skip content_part.added; SDK IndexError",
    )
    ev = with_call()
    first(ev, "response.output_item.done", lambda e: e["item"]["type"] == "function_call")["item"][
        "call_id"
    ] = "call_X"
    final(ev)[1]["call_id"] = "call_X"
    emit("identity_changed.sse", ev, ["identity_changed"], "A6 probe: call_id changes added->done")
    ev = full()
    for e in ev:
        if e["type"] == "response.output_text.delta":
            e["item_id"] = "msg_other"
    emit("delta_item_id_mismatch.sse", ev, ["delta_item_id_mismatch"], "deltas name another item id")
    ev = (
        StreamBuilder()
        .function_call("f", ['{"a":1}'])
        .function_call("g", ['{"b":2}'], item_id="fc_2")
        .finish()
    )
    emit(
        "conflicting_identities.sse", ev, ["conflicting_identities"], "A6 probe: two calls share one call_id"
    )

    ev = without(
        full(), lambda e: e["type"] == "response.output_item.done" and e["item"]["type"] == "message"
    )
    final(ev).pop()
    emit(
        "unfinished_items.sse",
        ev,
        ["item_missing_from_final", "item_not_done", "unfinished_items"],
        "A6: completed while the message is unfinished and absent from output; SDK raises",
    )
    emit(
        "item_not_done.sse",
        without(
            full(), lambda e: e["type"] == "response.output_item.done" and e["item"]["type"] == "message"
        ),
        ["item_not_done"],
        "no output_item.done for the message, which the final output holds",
    )
    ev = full()
    del ev[-1]["response"]["output"]
    emit("final_output_missing.sse", ev, ["final_output_missing"], "completed without output (SDK rebuilds)")
    ev = full()
    ev[-1]["response"]["usage"] = None
    emit("usage_missing.sse", ev, ["usage_missing"], "W3/W12: completed without usage")

    ev = full()
    final(ev)[0]["id"] = "rs_a1b2"
    final(ev)[1]["id"] = "msg_c3d4"
    emit(
        "item_id_mismatch.sse", ev, ["item_id_mismatch"], "seed: final rebuild minted fresh ids (216 of 221)"
    )
    ev = with_call()
    final(ev)[1]["call_id"] = "chatcmpl-tool-9f8e"
    emit(
        "call_id_mismatch.sse",
        ev,
        ["call_id_mismatch"],
        "seed: call ids reminted for the final (1224 of 1224)",
    )
    ev = with_call()
    final(ev)[0]["id"] = "rs_9999"
    final(ev)[1].update(id="fc_9999", call_id="chatcmpl-tool-1")
    emit("vllm_reparse.sse", ev, ["call_id_mismatch", "item_id_mismatch"], "other-servers 2.1: second parse")
    ev = full()
    final(ev).reverse()
    emit("output_order.sse", ev, ["output_order"], "seed: snapshot put the message before the reasoning")
    ev = StreamBuilder().message(["Calling."]).function_call("f", ['{"a":', "1}"]).finish()
    final(ev).pop()
    emit(
        "item_missing_from_final.sse",
        ev,
        ["item_missing_from_final"],
        "a streamed call absent from the final",
    )
    ev = full()
    final(ev).append(
        {
            "id": "msg_x",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "<tool_call>get_weather", "annotations": []}],
        }
    )
    emit(
        "item_extra_in_final.sse",
        ev,
        ["item_extra_in_final"],
        "seed: unterminated markup the stream held back, released only in the final",
    )

    ev = StreamBuilder().message(["  It is", " sunny.\n"]).finish()
    final(ev)[0]["content"][0]["text"] = "It is sunny."
    emit("text_mismatch.sse", ev, ["text_mismatch"], "seed: the snapshot stripped edge whitespace")
    ev = StreamBuilder().refusal(["I can't", " help."]).finish()
    first(ev, "response.refusal.done")["refusal"] = "I cannot help."
    emit("refusal_mismatch.sse", ev, ["refusal_mismatch"], "refusal done event disagrees with its deltas")
    ev = full()
    short = "Let me check the"
    ev = [e for e in ev if not (e["type"] == "response.reasoning_text.delta" and e["delta"] == " weather.")]
    first(ev, "response.reasoning_text.done")["text"] = short
    first(ev, "response.content_part.done", lambda e: e["item_id"] == "rs_1")["part"]["text"] = short
    first(ev, "response.output_item.done", lambda e: e["output_index"] == 0)["item"]["content"][0]["text"] = (
        short
    )
    emit(
        "reasoning_tail_lost.sse",
        number(ev),
        ["reasoning_tail_lost"],
        "seed: the chunk straddling </think> lost its reasoning half in deltas and done; the final re-parse kept it",
    )
    ev = full()
    final(ev).pop(0)
    emit(
        "reasoning_dropped.sse",
        ev,
        ["item_missing_from_final", "output_order", "reasoning_tail_lost"],
        "the final output lost the whole reasoning item (and the message moved up)",
    )
    ev = full()
    first(ev, "response.reasoning_text.done")["text"] = "Let me check the climate."
    emit("reasoning_mismatch.sse", ev, ["reasoning_mismatch"], "reasoning done event rewritten, not cut")
    ev = StreamBuilder().function_call("lookup", ['{"zip":', ' "99797"}']).finish()
    first(ev, "response.function_call_arguments.done")["arguments"] = '{"zip": 99797}'
    first(ev, "response.output_item.done")["item"]["arguments"] = '{"zip": 99797}'
    final(ev)[0]["arguments"] = '{"zip": 99797}'
    emit("arguments_mismatch.sse", ev, ["arguments_mismatch"], "seed: a declared string re-typed in the done")
    ev = StreamBuilder().custom_call("apply_patch", ["*** Begin Patch\n", "+x\n", "*** End Patch\n"]).finish()
    final(ev)[0]["input"] = "*** Begin Patch\n+x\n"
    emit("input_mismatch.sse", ev, ["input_mismatch"], "custom tool input cut in the final")


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for old in HERE.iterdir():
        old.unlink()
    clean()
    defects()
    manifest = {name: {"codes": codes, "models": why} for name, (codes, why) in sorted(CORPUS.items())}
    (HERE.parent / "streams_expected.json").write_text(
        json.dumps(manifest, indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
