"""The defect classes the audit reports, each with the unit its census counts in.

A census line reads "<title> in N of M <unit>", so each class names what M counts: whole streams, responses
that ended with a final snapshot, or items of one kind. The item-level classes are the ones the recorded
incidents were measured in ("reasoning tail lost in 55% of reasoning items", "call ids reminted in 1224 of
1224 calls"); stream-level ones say how many streams a client would have seen break.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Unit = Literal[
    "streams",
    "responses",
    "items",
    "message items",
    "reasoning items",
    "tool calls",
    "function calls",
    "custom tool calls",
]


class DefectClass(msgspec.Struct, frozen=True):
    code: str
    title: str
    unit: Unit
    #: Why it matters, for ``--json`` readers and the census legend.
    meaning: str


_CLASSES: tuple[DefectClass, ...] = (
    # -- reading the stream
    DefectClass("bad_event", "malformed event", "streams", "a data payload that is not a JSON event object"),
    DefectClass(
        "unterminated_frame",
        "body ended inside a frame",
        "streams",
        "the last frame has no blank line after it, so a client never dispatches it",
    ),
    DefectClass(
        "error_nested",
        "nested error object",
        "streams",
        'a payload with a top-level "error" object; the openai SDK raises APIError on it',
    ),
    # -- numbering and lifecycle
    DefectClass(
        "sequence_missing", "sequence_number missing", "streams", "events without an integer sequence_number"
    ),
    DefectClass(
        "sequence_gap",
        "sequence_number gap",
        "streams",
        "sequence numbers skip a value (or do not start at 0)",
    ),
    DefectClass(
        "sequence_restart",
        "sequence_number restart",
        "streams",
        "sequence numbers go back (0,1,0,1,2... when two producers number one stream)",
    ),
    DefectClass(
        "first_not_created",
        "first event not response.created",
        "streams",
        "the SDK raises unless response.created comes first",
    ),
    DefectClass(
        "lifecycle_id_changed",
        "response id changed",
        "streams",
        "lifecycle events carry different response ids; the SDK raises",
    ),
    DefectClass(
        "missing_terminal", "no terminal event", "streams", "the stream ends without a terminal event"
    ),
    DefectClass(
        "multiple_terminal", "more than one terminal event", "streams", "a second terminal event was sent"
    ),
    DefectClass(
        "event_after_terminal",
        "events after the terminal event",
        "streams",
        "nothing may follow the terminal",
    ),
    DefectClass(
        "terminal_status_mismatch",
        "terminal event disagrees with status",
        "streams",
        "response.completed/incomplete/failed whose response.status (or error/incomplete_details) does not match",
    ),
    DefectClass(
        "event_order", "event order", "streams", "events out of the documented order (docs/spec.md A5)"
    ),
    DefectClass(
        "logprobs_missing",
        "logprobs missing on output_text events",
        "streams",
        "output_text.delta/done without a logprobs list; a strict SDK client raises",
    ),
    # -- the SDK accumulator's own checks
    DefectClass(
        "content_before_item",
        "content event before its item",
        "streams",
        "an event for an output_index whose output_item.added never came",
    ),
    DefectClass(
        "duplicate_output_index", "duplicate output_index", "streams", "two output_item.added for one index"
    ),
    DefectClass(
        "wrong_item_type",
        "event for the wrong item type",
        "streams",
        "e.g. output_text.delta on a reasoning item; the SDK asserts",
    ),
    DefectClass(
        "missing_content_part",
        "delta without content_part.added",
        "streams",
        "text events for a content part that was never added; the SDK fails indexing it",
    ),
    DefectClass(
        "identity_changed",
        "item identity changed between added and done",
        "items",
        "type, id or call_id differ between output_item.added and output_item.done; the SDK raises",
    ),
    DefectClass(
        "delta_item_id_mismatch",
        "delta item_id differs from its item",
        "items",
        "item_id on deltas/done events is not the id the item was added with",
    ),
    DefectClass(
        "conflicting_identities",
        "two items share one identity",
        "responses",
        "two items with the same (type, id, call_id), e.g. a repeated call_id",
    ),
    DefectClass(
        "unfinished_items",
        "completed with unfinished items",
        "streams",
        "response.completed while an added item has neither output_item.done nor a place in output; the SDK raises",
    ),
    DefectClass(
        "item_not_done", "item never done", "items", "an item was added but no output_item.done followed"
    ),
    # -- stream versus final snapshot
    DefectClass(
        "final_output_missing",
        "final response without output",
        "responses",
        "the terminal response carries no output list",
    ),
    DefectClass(
        "usage_missing", "final response without usage", "responses", "completed/incomplete without usage"
    ),
    DefectClass(
        "item_id_mismatch",
        "stream/final item id mismatch",
        "responses",
        "the final snapshot names an item by another id than the stream did",
    ),
    DefectClass(
        "call_id_mismatch",
        "stream/final call_id mismatch",
        "tool calls",
        "the final snapshot carries another call_id than the stream did",
    ),
    DefectClass(
        "output_order",
        "output order differs",
        "responses",
        "final output order differs from the streamed order, or output_index does not count 0..n-1",
    ),
    DefectClass(
        "item_missing_from_final",
        "streamed item missing from final",
        "items",
        "an item the stream showed is absent from the final output",
    ),
    DefectClass(
        "item_extra_in_final",
        "final item never streamed",
        "responses",
        "the final output holds an item the stream never showed",
    ),
    DefectClass(
        "text_mismatch",
        "output text differs between deltas, done and final",
        "message items",
        "concatenated output_text deltas, the done events and the final text disagree",
    ),
    DefectClass(
        "refusal_mismatch",
        "refusal differs between deltas, done and final",
        "message items",
        "concatenated refusal deltas, the done events and the final refusal disagree",
    ),
    DefectClass(
        "reasoning_tail_lost",
        "reasoning tail lost",
        "reasoning items",
        "one view of the reasoning is a strict prefix of another, or the final response dropped it",
    ),
    DefectClass(
        "reasoning_mismatch",
        "reasoning differs between views",
        "reasoning items",
        "reasoning text disagrees between deltas, done events and final, other than a lost tail",
    ),
    DefectClass(
        "arguments_mismatch",
        "function arguments differ between views",
        "function calls",
        "concatenated argument deltas, function_call_arguments.done and final arguments disagree",
    ),
    DefectClass(
        "input_mismatch",
        "custom tool input differs between views",
        "custom tool calls",
        "concatenated custom_tool_call_input deltas, the done event and the final input disagree",
    ),
)

#: Chat Completions and Messages captures (``protocol_check.py``).
_PROTOCOL_CLASSES: tuple[DefectClass, ...] = (
    DefectClass(
        "messages_grammar",
        "Messages event grammar broken",
        "streams",
        "events out of Anthropic's order: message_start, blocks (start, deltas, stop), message_delta, message_stop",
    ),
    DefectClass(
        "messages_after_end", "events after message_stop", "streams", "the stream goes on after its end"
    ),
    DefectClass(
        "block_index_gap",
        "content block index skipped or repeated",
        "streams",
        "a content_block_start not at the next index; the anthropic SDK indexes blocks by position",
    ),
    DefectClass(
        "delta_kind_mismatch",
        "delta of another block's kind",
        "streams",
        "a text_delta in a tool_use block, or the like; the SDK's accumulator drops or misfiles it",
    ),
    DefectClass(
        "tool_input_not_json",
        "tool input deltas are not JSON",
        "streams",
        "a tool_use block's input_json_delta text does not parse; the SDK raises at the block's end",
    ),
    DefectClass(
        "tool_call_index_gap",
        "tool-call index skipped",
        "streams",
        "a Chat Completions tool call opens at an index past the next one",
    ),
    DefectClass(
        "chat_call_reopened",
        "tool call's id or name repeated",
        "streams",
        "openai's accumulator concatenates every string, so a repeated name is doubled",
    ),
    DefectClass("chat_role_repeated", "role repeated", "streams", "role sent in more than the first chunk"),
    DefectClass(
        "chat_grammar",
        "Chat Completions chunk order broken",
        "streams",
        "no finish_reason, two of them, or a call opened without its id and name",
    ),
    DefectClass("chat_after_done", "chunks after the end", "streams", "data after [DONE] or the error chunk"),
)

#: The classes of Responses streams, and those only Chat Completions and Messages captures have.
RESPONSES_CLASSES = frozenset(c.code for c in _CLASSES)
PROTOCOL_CLASSES = frozenset(c.code for c in _PROTOCOL_CLASSES)
DEFECT_CLASSES: dict[str, DefectClass] = {c.code: c for c in (*_CLASSES, *_PROTOCOL_CLASSES)}
