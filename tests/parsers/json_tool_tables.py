"""The corpus tables of the JSON-argument tool parsers and the harmony splitter, as code.

Run ``python -m tests.parsers.json_tool_tables`` to rewrite the JSON tables under
``accord/replay/corpus`` from the rows below; ``test_json_tool_tables`` checks that the
packaged tables are exactly what this module builds, so the two never drift.

Most rows are written once for every family (:func:`common_rows`): a family's
:class:`Writer` renders a block of calls in that family's markup together with the
segments the block must come out as, so a row reads as "text, calls, text" and its
expectation is stated, not computed by a parser. Rows only one family has (Mistral's two
generations, Kimi's ids, Llama 3's bare JSON, DeepSeek's fences, harmony headers) follow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "accord" / "replay" / "corpus"

Seg = dict[str, Any]

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
TOOLS: list[dict[str, Any]] = [
    WEATHER,
    {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
    {
        "name": "configure",
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "meta": {"type": "object"},
                "ratio": {"type": "number"},
                "enabled": {"type": "boolean"},
            },
        },
    },
    {
        "name": "crm.lookup",
        "namespace": "crm",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    },
    {
        "name": "apply_patch",
        "kind": "custom",
        "parameters": {"type": "object", "properties": {"input": {"type": "string"}}},
    },
    {"name": "free_form"},
]


def text(s: str) -> Seg:
    return {"kind": "content", "text": s}


def commentary(s: str) -> Seg:
    return {"kind": "content", "text": s, "phase": "commentary"}


def reasoning(s: str) -> Seg:
    return {"kind": "reasoning", "text": s}


def call(name: str, arguments: str, call_id: str | None = None) -> Seg:
    seg: Seg = {"kind": "tool_call", "name": name, "arguments": arguments}
    if call_id is not None:
        seg["call_id"] = call_id
    return seg


def merge(segments: Sequence[Seg]) -> list[Seg]:
    """What ``merge_segments`` makes of ``segments``: adjacent text of one kind joined."""
    out: list[Seg] = []
    for seg in segments:
        is_call = seg["kind"] == "tool_call"
        if not is_call and not seg["text"]:
            continue
        if (
            out
            and not is_call
            and out[-1]["kind"] == seg["kind"]
            and out[-1].get("phase") == seg.get("phase")
        ):
            out[-1] = {**out[-1], "text": out[-1]["text"] + seg["text"]}
        else:
            out.append(dict(seg))
    return out


@dataclass(frozen=True)
class C:
    """A call as the model writes it: ``raw`` name (default: the declared one) and arguments."""

    name: str
    args: str = "{}"
    raw: str | None = None

    @property
    def written(self) -> str:
        return self.raw if self.raw is not None else self.name


class Writer:
    """How one family writes a block of calls, and what that block must parse to."""

    parser: str
    opener: str
    closer: str
    #: The end of a call section: dropped after a call.
    section_end = ""

    def call_id(self, c: C, index: int) -> str | None:
        """The model's own id for the ``index``-th call of a block, where the format has one."""
        del c, index
        return None

    def stopped(self, markup: str) -> list[Seg]:
        """What ``markup`` (one block whose call never completes) parses to: all of it is text.

        No call is reported before it is complete and valid (SPEC P4), so nothing of it was
        sent as a call either.
        """
        return [text(self.shown(markup))]

    def undeclared(self, markup: str, args: str) -> list[Seg]:
        """What one call to an undeclared tool, ``markup``, parses to: text, as written."""
        del args
        return [text(self.shown(markup))]

    def shown(self, markup: str) -> str:
        """What of ``markup``, released as text, is shown (all of it, unless the format drops tokens)."""
        return markup

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        raise NotImplementedError

    def cut_inside_args(self) -> str:
        """A call cut off inside its arguments."""
        markup, _ = self.block([C("get_weather", '{"city": "Par')])
        return markup[: markup.index('{"city": "Par') + len('{"city": "Par')]


class Row:
    def __init__(self, name: str, output: str, expect: Sequence[Seg]) -> None:
        self.name = name
        self.output = output
        self.expect = merge(expect)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "output": self.output, "tools": TOOLS, "expect": self.expect}


Part = str | tuple[C, ...]


def compose(w: Writer, name: str, *parts: Part) -> Row:
    """A row of text parts and blocks of calls, with the expectation each part stands for."""
    output: list[str] = []
    expect: list[Seg] = []
    index = 0
    for part in parts:
        if isinstance(part, str):
            output.append(part)
            expect.append(text(part))
        else:
            markup, segs = w.block(part, after_text=bool(output), first=index)
            index += len(part)
            output.append(markup)
            expect.extend(segs)
    return Row(name, "".join(output), expect)


def as_text(name: str, output: str) -> Row:
    return Row(name, output, [text(output)])


# -- the rows every family has -----------------------------------------------------------------

PARIS = C("get_weather", '{"city": "Paris", "days": 3}')
ROME = C("get_weather", '{"city": "Rome"}')
TIME = C("get_time")
PATCH = C(
    "apply_patch",
    '{"input": "*** Begin Patch\\n*** Update File: a.py\\n@@\\n-x = 1\\n+x = 2\\n*** End Patch"}',
)


def common_rows(w: Writer) -> list[Row]:
    quoting = C("apply_patch", json.dumps({"input": f"a {w.closer} b {w.opener} c"}))
    rows = [
        compose(w, "single_call", (PARIS,)),
        compose(w, "text_then_call", "Let me check the weather. ", (PARIS,)),
        compose(w, "call_then_text", (PARIS,), " Done."),
        compose(w, "two_calls_one_block", (PARIS, ROME)),
        compose(w, "five_calls_one_block", (PARIS, TIME, ROME, C("crm.lookup", '{"id": "7"}'), TIME)),
        compose(w, "text_between_blocks", "First: ", (PARIS,), " and then ", (ROME,), " end."),
        compose(w, "zero_argument_call", (TIME,)),
        compose(
            w, "strings_that_look_like_numbers", (C("configure", '{"code": "007", "tags": ["true", "[1]"]}'),)
        ),
        compose(
            w,
            "nested_arguments",
            (C("configure", '{"meta": {"k": [1, {"x": null}]}, "enabled": false, "ratio": -1.5e3}'),),
        ),
        compose(
            w, "escaped_quotes_and_backslashes", (C("get_weather", r'{"city": "say \"hi\" \\ \u00e9\n"}'),)
        ),
        compose(w, "unicode_arguments", "天气：", (C("get_weather", '{"city": "北京 ☀️"}'),)),
        compose(w, "pretty_printed_arguments", (C("get_weather", '{\n  "city": "Rome",\n  "days": 2\n}'),)),
        compose(w, "markers_quoted_in_a_string_argument", (quoting,)),
        compose(w, "brackets_quoted_in_a_string_argument", (C("apply_patch", r'{"input": "} { ] [ \" <"}'),)),
        compose(
            w,
            "extra_qualifier_repaired",
            (C("get_weather", '{"city": "Oslo"}', raw="default_api.get_weather"),),
        ),
        compose(w, "missing_namespace_repaired", (C("crm.lookup", '{"id": "42"}', raw="lookup"),)),
        compose(w, "namespaced_name", (C("crm.lookup", '{"id": "42"}'),)),
        compose(w, "custom_tool_multiline_input", "Patching. ", (PATCH,)),
        compose(w, "tool_without_schema", (C("free_form", '{"anything": [1, 2]}'),)),
        as_text("prose_mentions_tool", "You could call get_weather(city) or get_time here."),
        as_text("comparisons_in_text", "if a < b and b <c then x <| y ok"),
        Row(
            "truncated_inside_arguments",
            "Checking. " + w.cut_inside_args(),
            [
                text("Checking. "),
                *w.stopped(w.cut_inside_args()),
            ],
        ),
        as_text("truncated_inside_opener", "Checking. " + w.opener[:-2]),
        as_text("stray_closer_is_text", f"done {w.closer} ok"),
    ]
    undeclared, _ = w.block([C("launch_rocket", '{"x": 1}', raw="launch_rocket")])
    rows.append(Row("undeclared_tool_released", undeclared, w.undeclared(undeclared, '{"x": 1}')))
    bad = C("get_weather", '{"city": Paris}')
    invalid, _ = w.block([bad])
    rows.append(Row("invalid_json_released", invalid, w.stopped(invalid)))
    nan_call = C("configure", '{"ratio": nan}')
    nan, _ = w.block([nan_call])
    rows.append(Row("nan_is_not_json", nan, w.stopped(nan)))
    # Arguments that never become valid JSON before the call ends: the whole call is text,
    # nothing of it is reported as a call (SPEC P4).
    for row_name, args in (
        ("missing_closing_brace_released", '{"city": "Paris"'),
        ("trailing_comma_released", '{"city": "Paris",}'),
        ("unquoted_key_released", '{city: "Paris"}'),
    ):
        broken, _ = w.block([C("get_weather", args)])
        rows.append(Row(row_name, broken, w.stopped(broken)))
    broken, _ = w.block([C("get_weather", '{"city": "Paris",}')])
    valid, valid_segs = w.block([ROME], after_text=True)
    rows.append(
        Row(
            "broken_call_then_valid_call",
            broken + " Retrying: " + valid,
            [text(w.shown(broken) + " Retrying: "), *valid_segs],
        )
    )
    empty, _ = w.block([C("get_weather", '{"city": "Paris"}', raw="")])
    rows.append(Row("empty_name_released", empty, w.undeclared(empty, '{"city": "Paris"}')))
    return rows


def restart_row(w: Writer, cut: str, name: str = "restarted_opener_parsed_from_restart") -> Row:
    """``cut`` (an opener and part of a call), then a whole call: the cut part is text, then the call."""
    markup, segs = w.block([ROME], after_text=True)
    return Row(name, cut + markup, [text(w.shown(cut)), *segs])


# -- Hermes / Qwen -------------------------------------------------------------------------------


class Hermes(Writer):
    parser = "hermes"
    opener = "<tool_call>"
    closer = "</tool_call>"

    def one(self, c: C) -> str:
        return f'<tool_call>\n{{"name": {json.dumps(c.written, ensure_ascii=False)}, "arguments": {c.args}}}\n</tool_call>'

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        expect: list[Seg] = []
        for i, c in enumerate(calls):
            if i:
                expect.append(text("\n"))
            expect.append(call(c.name, c.args))
        return "\n".join(self.one(c) for c in calls), expect


def hermes_rows() -> list[Row]:
    w = Hermes()
    paris = w.one(PARIS)
    return [
        *common_rows(w),
        restart_row(w, '<tool_call>\n{"name": "get_weather", "argu'),
        restart_row(
            w,
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',
            "restarted_opener_inside_a_string_argument",
        ),
        Row("qwen3_layout_after_reasoning", "\n\n" + paris, [text("\n\n"), call("get_weather", PARIS.args)]),
        Row(
            "call_without_arguments_member",
            '<tool_call>{"name": "get_time"}</tool_call>',
            [call("get_time", "{}")],
        ),
        Row(
            "null_arguments",
            '<tool_call>{"name": "get_time", "arguments": null}</tool_call>',
            [call("get_time", "{}")],
        ),
        Row(
            "parameters_synonym",
            '<tool_call>{"name": "get_weather", "parameters": {"city": "Rome"}}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "arguments_encoded_as_a_string",
            '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "cut_before_closer_keeps_complete_call",
            "Sure. " + paris[: -len("</tool_call>")],
            [text("Sure. "), call("get_weather", PARIS.args)],
        ),
        Row(
            "cut_inside_closer_keeps_complete_call",
            paris[: -len("call>")],
            [call("get_weather", PARIS.args)],
        ),
        Row(
            "complete_call_then_cut_call",
            paris + "\n" + w.cut_inside_args(),
            [call("get_weather", PARIS.args), text("\n" + w.cut_inside_args())],
        ),
        Row(
            "undeclared_then_declared",
            w.one(C("launch_rocket", "{}")) + w.one(TIME),
            [text(w.one(C("launch_rocket", "{}"))), call("get_time", "{}")],
        ),
        as_text(
            "opener_mentioned_in_prose", "Calls go in <tool_call> tags, like <tool_call>this</tool_call>."
        ),
        as_text("lookalike_openers", "<tool_calls> <tool_callx> <tool_call_"),
        as_text(
            "arguments_not_an_object", '<tool_call>{"name": "get_weather", "arguments": [1, 2]}</tool_call>'
        ),
        as_text("junk_between_payload_and_closer", '<tool_call>{"name": "get_time"} junk</tool_call>'),
        Row(
            "junk_after_the_arguments_object",
            '<tool_call>{"name": "get_time", "arguments": {}} junk</tool_call>',
            [text('<tool_call>{"name": "get_time", "arguments": {}} junk</tool_call>')],
        ),
        Row(
            "wrapper_invalid_after_the_arguments",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}, "x": NaN}</tool_call>',
            [text('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}, "x": NaN}</tool_call>')],
        ),
        Row(
            "arguments_before_the_name_reported_whole",
            '<tool_call>{"arguments": {"city": "Rome"}, "name": "get_weather"}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "members_after_the_arguments",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}, "id": 7}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "cut_after_the_arguments",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}',
            [text('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}')],
        ),
        Row(
            "marker_quoted_then_cut",
            '<tool_call>{"name": "apply_patch", "arguments": {"input": "a <tool_call> b',
            [text('<tool_call>{"name": "apply_patch", "arguments": {"input": "a <tool_call> b')],
        ),
        Row(
            "part_of_a_marker_then_cut",
            '<tool_call>{"name": "apply_patch", "arguments": {"input": "a </tool_ca',
            [text('<tool_call>{"name": "apply_patch", "arguments": {"input": "a </tool_ca')],
        ),
        as_text("missing_name", '<tool_call>{"arguments": {"city": "Rome"}}</tool_call>'),
        as_text("two_objects_in_one_call", '<tool_call>{"name": "get_time"}{"name": "get_time"}</tool_call>'),
        Row(
            "markup_fused_into_name",
            '<tool_call>{"name": "<tool_call>get_time", "arguments": {}}</tool_call>',
            [call("get_time", "{}")],
        ),
        # The usual layout is read from the decoded value; these look like it and are not.
        Row(
            "compact_layout",
            'A<tool_call>{"name":"get_weather","arguments":{"city":"Rome"}}</tool_call>B',
            [text("A"), call("get_weather", '{"city":"Rome"}'), text("B")],
        ),
        Row(
            "repeated_arguments_key_keeps_the_first",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}, "arguments": {"city": "Oslo"}}'
            "</tool_call>",
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "arguments_first_compact_layout",
            '<tool_call>{"arguments":{"city":"Oslo"},"name":"get_weather"}</tool_call>',
            [call("get_weather", '{"city":"Oslo"}')],
        ),
        as_text(
            "arguments_first_then_junk_before_the_closer",
            '<tool_call>{"arguments": {}, "name": "get_time"} junk</tool_call>',
        ),
        as_text(
            "arguments_first_then_invalid_member",
            '<tool_call>{"arguments": {"city": "Oslo"}, "name": "get_weather", "x": NaN}</tool_call>',
        ),
        Row(
            "repeated_arguments_key_first_encoded_as_a_string",
            '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}", '
            '"arguments": {"city": "Oslo"}}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "repeated_name_key_keeps_the_first",
            '<tool_call>{"name": "get_weather", "arguments": {}, "name": "get_time"}</tool_call>',
            [call("get_weather", "{}")],
        ),
        Row(
            "escaped_name",
            '<tool_call>{"name": "get\\u005ftime", "arguments": {}}</tool_call>',
            [call("get_time", "{}")],
        ),
        Row(
            "blanks_inside_the_wrapper",
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"} \n}</tool_call>',
            [call("get_weather", '{"city": "Rome"}')],
        ),
    ]


# -- Llama 3 -------------------------------------------------------------------------------------


class Llama3(Writer):
    parser = "llama3_json"
    opener = "<|python_tag|>"
    closer = "<|eom_id|>"

    def one(self, c: C) -> str:
        return f'{{"name": {json.dumps(c.written, ensure_ascii=False)}, "parameters": {c.args}}}'

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        markup = "; ".join(self.one(c) for c in calls)
        return (self.opener if after_text else "") + markup, [call(c.name, c.args) for c in calls]

    def cut_inside_args(self) -> str:
        return self.opener + '{"name": "get_weather", "parameters": {"city": "Par'


def llama3_rows() -> list[Row]:
    w = Llama3()
    paris, rome = w.one(PARIS), w.one(ROME)
    return [
        *common_rows(w),
        restart_row(w, '<|python_tag|>{"name": "get_weather", "param'),
        Row("bare_call_after_whitespace", "\n " + paris, [text("\n "), call("get_weather", PARIS.args)]),
        Row("python_tag_at_start", "<|python_tag|>" + paris, [call("get_weather", PARIS.args)]),
        Row(
            "separator_without_space",
            paris + ";" + rome,
            [call("get_weather", PARIS.args), call("get_weather", ROME.args)],
        ),
        Row(
            "newline_between_calls",
            paris + "\n" + rome,
            [call("get_weather", PARIS.args), call("get_weather", ROME.args)],
        ),
        Row("trailing_separator_dropped", paris + "; ", [call("get_weather", PARIS.args)]),
        Row(
            "separator_then_text", paris + "; and more", [call("get_weather", PARIS.args), text("; and more")]
        ),
        Row(
            "type_function_member",
            '{"type": "function", "name": "get_time", "parameters": {}}',
            [call("get_time", "{}")],
        ),
        Row("arguments_synonym", '{"name": "get_time", "arguments": {}}', [call("get_time", "{}")]),
        Row("no_parameters_member", '{"name": "get_time"}', [call("get_time", "{}")]),
        as_text("json_answer_is_text", '{"answer": 42, "name": "get_time", "parameters": {}}'),
        as_text("json_list_is_text", '[{"name": "get_time", "parameters": {}}]'),
        as_text("bare_json_after_text_is_text", "Here: " + paris),
        as_text("bad_call_makes_the_rest_text", w.one(C("launch_rocket", "{}")) + "; " + paris),
        as_text("type_other_than_function", '{"type": "tool", "name": "get_time", "parameters": {}}'),
        as_text("cut_bare_call", paris[:-5]),
    ]


# -- Mistral -------------------------------------------------------------------------------------


class Mistral(Writer):
    parser = "mistral"
    opener = "[TOOL_CALLS]"
    closer = "[/TOOL_RESULTS]"

    def one(self, c: C) -> str:
        return f"[TOOL_CALLS]{c.written}[ARGS]{c.args}"

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        return "".join(self.one(c) for c in calls), [call(c.name, c.args) for c in calls]


def mistral_rows() -> list[Row]:
    w = Mistral()
    old = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]'
    return [
        *common_rows(w),
        restart_row(w, '[TOOL_CALLS]get_weather[ARGS]{"city": "Par'),
        Row(
            "pre_v11_list",
            "Sure." + old,
            [text("Sure."), call("get_weather", '{"city": "Paris"}'), call("get_time", "{}")],
        ),
        Row(
            "pre_v11_single_object_with_id",
            '[TOOL_CALLS] {"name": "get_time", "arguments": {}, "id": "a1B2c3D4e"}',
            [call("get_time", "{}", "a1B2c3D4e")],
        ),
        Row(
            "pre_v11_list_then_text",
            old + " ok",
            [call("get_weather", '{"city": "Paris"}'), call("get_time", "{}"), text(" ok")],
        ),
        as_text("pre_v11_list_with_undeclared_call_is_text", old.replace("get_time", "launch_rocket")),
        as_text("pre_v11_empty_list_is_text", "[TOOL_CALLS][]"),
        as_text("pre_v11_cut_list", old[:-3]),
        Row(
            "v11_without_args_marker",
            '[TOOL_CALLS]get_weather{"city": "Rome"}',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "v11_call_id",
            '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Rome"}',
            [call("get_weather", '{"city": "Rome"}', "abc123XYZ")],
        ),
        Row("v11_space_before_args", "[TOOL_CALLS] get_time [ARGS] {}", [call("get_time", "{}")]),
        as_text("v11_name_with_spaces_is_text", '[TOOL_CALLS]get weather[ARGS]{"city": "Rome"}'),
        as_text("v11_no_name_is_text", '[TOOL_CALLS][ARGS]{"city": "Rome"}'),
        as_text("opener_mentioned_in_prose", "The [TOOL_CALLS] token starts a call."),
        # Output that stops right after the marker shows no marker (issue 12, class 3).
        Row(
            "stops_right_after_marker",
            "Let me check the weather.[TOOL_CALLS]",
            [text("Let me check the weather.")],
        ),
        Row("stops_after_marker_and_whitespace", "Checking.[TOOL_CALLS] \n", [text("Checking. \n")]),
        Row("marker_only", "[TOOL_CALLS]", []),
    ]


# -- DeepSeek V3 and V3.1 --------------------------------------------------------------------------

DS_SB, DS_SE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CB, DS_CE, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


class DeepSeek(Writer):
    opener = DS_CB
    closer = DS_CE
    section_end = DS_SE

    def __init__(self, parser: str, one: Callable[[C], str], between: str) -> None:
        self.parser = parser
        self.one = one
        self.between = between

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        expect: list[Seg] = []
        for i, c in enumerate(calls):
            if i:
                expect.append(text(self.between))
            expect.append(call(c.name, c.args))
        return DS_SB + self.between.join(self.one(c) for c in calls) + DS_SE, expect


def _v3_one(c: C) -> str:
    return f"{DS_CB}function{DS_SEP}{c.written}\n```json\n{c.args}\n```{DS_CE}"


def _v31_one(c: C) -> str:
    return f"{DS_CB}{c.written}{DS_SEP}{c.args}{DS_CE}"


def deepseek_rows(w: DeepSeek) -> list[Row]:
    one = w.one
    paris, time = one(PARIS), one(TIME)
    cut_rome = one(ROME)[: one(ROME).index('"Rome') + 3]
    rows = [
        *common_rows(w),
        restart_row(
            w, DS_SB + DS_CB + ("function" + DS_SEP if w.parser == "deepseek_v3" else "") + "get_weather"
        ),
        Row(
            "section_cut_after_complete_calls",
            DS_SB + paris + w.between + time,
            [call("get_weather", PARIS.args), text(w.between), call("get_time", "{}")],
        ),
        Row(
            "section_cut_inside_second_call",
            DS_SB + paris + w.between + cut_rome,
            [call("get_weather", PARIS.args), text(w.between + cut_rome)],
        ),
        Row(
            "call_cut_before_its_end_marker",
            DS_SB + paris[: -len(DS_CE)],
            [call("get_weather", PARIS.args)],
        ),
        Row("call_without_section", "Ok " + paris, [text("Ok "), call("get_weather", PARIS.args)]),
        Row(
            "undeclared_then_declared_in_one_section",
            DS_SB + one(C("launch_rocket")) + time + DS_SE,
            [text(DS_SB + one(C("launch_rocket"))), call("get_time", "{}")],
        ),
        as_text("empty_section_is_text", DS_SB + DS_SE),
        as_text("text_inside_section_is_text", DS_SB + "hmm" + DS_SE),
        Row(
            "section_end_missing_then_text",
            DS_SB + paris + " after",
            [call("get_weather", PARIS.args), text(" after")],
        ),
    ]
    if w.parser == "deepseek_v3":
        rows += [
            Row(
                "no_fence",
                f"{DS_SB}{DS_CB}function{DS_SEP}get_time\n{{}}{DS_CE}{DS_SE}",
                [call("get_time", "{}")],
            ),
            Row(
                "fence_without_language",
                f"{DS_SB}{DS_CB}function{DS_SEP}get_time\n```\n{{}}\n```{DS_CE}{DS_SE}",
                [call("get_time", "{}")],
            ),
            as_text("v31_layout_is_text_for_v3", _v31_one(TIME)),
        ]
    else:
        rows += [
            Row(
                "zero_arguments_without_braces",
                f"{DS_SB}{DS_CB}get_time{DS_SEP}{DS_CE}{DS_SE}",
                [call("get_time", "{}")],
            ),
            Row(
                "fenced_arguments_tolerated",
                f"{DS_SB}{DS_CB}get_time{DS_SEP}```json\n{{}}\n```{DS_CE}{DS_SE}",
                [call("get_time", "{}")],
            ),
            Row(
                "two_calls_no_separator_never_merge",
                DS_SB + time + _v31_one(C("get_weather", '{"city": "Rome"}')) + DS_SE,
                [call("get_time", "{}"), call("get_weather", '{"city": "Rome"}')],
            ),
        ]
    return rows


# -- Kimi-K2 -------------------------------------------------------------------------------------

K_SB, K_SE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
K_CB, K_CE, K_ARG = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"


class Kimi(Writer):
    parser = "kimi_k2"
    opener = K_CB
    closer = K_CE
    section_end = K_SE

    def call_id(self, c: C, index: int) -> str | None:
        return f"functions.{c.written}:{index}"

    def shown(self, markup: str) -> str:
        """Kimi's section markers are special tokens, dropped wherever they stand."""
        for marker in (K_SB, K_SE, "<|tool_call_section_begin|>", "<|tool_call_section_end|>"):
            markup = markup.replace(marker, "")
        return markup

    def one(self, c: C, index: int) -> str:
        return f"{K_CB}functions.{c.written}:{index}{K_ARG}{c.args}{K_CE}"

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        markup = K_SB + "".join(self.one(c, first + i) for i, c in enumerate(calls)) + K_SE
        return markup, [
            call(c.name, c.args, f"functions.{c.written}:{first + i}") for i, c in enumerate(calls)
        ]


def kimi_rows() -> list[Row]:
    w = Kimi()
    paris, time = w.one(PARIS, 0), w.one(TIME, 1)
    paris_call = call("get_weather", PARIS.args, "functions.get_weather:0")
    return [
        *common_rows(w),
        restart_row(
            w,
            K_SB + K_CB + "functions.get_weather:0" + K_ARG + '{"city": "Pa',
        ),
        Row(
            "section_cut_keeps_complete_calls",
            K_SB + paris + time + K_CB + "functions.get_weather:2" + K_ARG + '{"city": "Ro',
            [
                paris_call,
                call("get_time", "{}", "functions.get_time:1"),
                text(K_CB + "functions.get_weather:2" + K_ARG + '{"city": "Ro'),
            ],
        ),
        Row("call_cut_before_its_end_marker", K_SB + paris[: -len(K_CE)], [paris_call]),
        Row(
            "singular_section_markers",
            "<|tool_call_section_begin|>" + paris + "<|tool_call_section_end|>",
            [paris_call],
        ),
        Row("call_without_section", "Ok. " + paris, [text("Ok. "), paris_call]),
        Row(
            "id_without_functions_prefix",
            K_SB + K_CB + "get_time:3" + K_ARG + "{}" + K_CE + K_SE,
            [call("get_time", "{}", "get_time:3")],
        ),
        Row(
            "zero_arguments_without_braces",
            K_SB + K_CB + "functions.get_time:0" + K_ARG + K_CE + K_SE,
            [call("get_time", "{}", "functions.get_time:0")],
        ),
        Row(
            "whitespace_around_id_and_arguments",
            K_SB + K_CB + " functions.get_time:0 " + K_ARG + " {} " + K_CE + K_SE,
            [call("get_time", "{}", "functions.get_time:0")],
        ),
        Row(
            "end_and_begin_in_one_chunk",
            K_SB + paris + K_CB + "functions.get_time:1" + K_ARG + "{}" + K_CE + K_SE + "\nDone.",
            [paris_call, call("get_time", "{}", "functions.get_time:1"), text("\nDone.")],
        ),
        Row(
            "undeclared_then_declared_in_one_section",
            K_SB + w.one(C("launch_rocket"), 0) + time + K_SE,
            [text(w.one(C("launch_rocket"), 0)), call("get_time", "{}", "functions.get_time:1")],
        ),
        # Kimi-K2 writes empty and noisy sections: the markers are special tokens, dropped.
        Row("empty_section_is_dropped", K_SB + K_SE, []),
        Row("empty_section_after_text_is_dropped", "Nothing." + K_SB + "\n" + K_SE, [text("Nothing.")]),
        Row(
            "empty_section_with_whitespace_dropped",
            "Done." + K_SB + "\n \n" + K_SE,
            [text("Done.")],
        ),
        Row(
            "empty_singular_spelling_dropped",
            "Ok.<|tool_call_section_begin|><|tool_call_section_end|> Bye.",
            [text("Ok. Bye.")],
        ),
        Row(
            "id_with_newline_is_text",
            K_SB + K_CB + "functions.get\n_time:0" + K_ARG + "{}" + K_CE + K_SE,
            [text(K_CB + "functions.get\n_time:0" + K_ARG + "{}" + K_CE)],
        ),
        Row(
            "noisy_section_markers_dropped",
            "Ok. " + K_SB + " junk noise " + K_SE + " Done.",
            [text("Ok.  junk noise  Done.")],
        ),
        Row(
            "noise_after_a_call_in_the_section",
            K_SB + paris + " stray " + K_SE + " Bye.",
            [paris_call, text(" stray  Bye.")],
        ),
        Row("section_begin_only_at_the_end", "Ok." + K_SB + "\n", [text("Ok.\n")]),
        Row("lone_section_end_dropped", "Ok." + K_SE + " Bye.", [text("Ok. Bye.")]),
    ]


# -- harmony (gpt-oss) -----------------------------------------------------------------------------

START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
END, RETURN, CALL = "<|end|>", "<|return|>", "<|call|>"


def harmony_call(name: str, args: str, *, in_role: bool = False, first: bool = False) -> str:
    if in_role:
        return f"{START}assistant to=functions.{name}{CHANNEL}commentary json{MESSAGE}{args}{CALL}"
    head = "" if first else START + "assistant"
    return f"{head}{CHANNEL}commentary to=functions.{name} {CONSTRAIN}json{MESSAGE}{args}{CALL}"


class Harmony(Writer):
    parser = "harmony"
    opener = CHANNEL
    closer = CALL

    def undeclared(self, markup: str, args: str) -> list[Seg]:
        """A message to a recipient no declared tool answers shows its body; the header is structure."""
        del markup
        return [commentary(args)]

    def block(self, calls: Sequence[C], *, after_text: bool = False, first: int = 0) -> tuple[str, list[Seg]]:
        markup = "".join(
            harmony_call(c.written, c.args, in_role=(first + i) % 2 == 1, first=first + i == 0)
            for i, c in enumerate(calls)
        )
        return markup, [call(c.name, c.args) for c in calls]


_QUOTED_HEADER = json.dumps({"input": f"{START}assistant{CHANNEL}final{MESSAGE}hi{RETURN}"})
_ESCAPED_QUOTE = '{"input": "say \\"<|call|>\\" ok \\\\"}'


def harmony_tool_rows() -> list[Row]:
    w = Harmony()
    rows = [r for r in common_rows(w) if r.name != "markers_quoted_in_a_string_argument"]
    quoting = harmony_call("apply_patch", '{"input": "a <|call|> b"}')
    return [
        *rows,
        # Inside a JSON string an end token is data; the message ends at the first one after it.
        Row(
            "call_token_quoted_in_a_string_is_data",
            quoting,
            [call("apply_patch", '{"input": "a <|call|> b"}')],
        ),
        Row(
            "end_and_return_tokens_quoted_in_a_string",
            harmony_call("apply_patch", '{"input": "x <|end|> y <|return|> z"}'),
            [call("apply_patch", '{"input": "x <|end|> y <|return|> z"}')],
        ),
        Row(
            "whole_header_quoted_in_a_string",
            harmony_call("apply_patch", _QUOTED_HEADER) + " Done.",
            [call("apply_patch", _QUOTED_HEADER), text(" Done.")],
        ),
        Row(
            "escaped_quote_before_quoted_call_token",
            harmony_call("apply_patch", _ESCAPED_QUOTE),
            [call("apply_patch", _ESCAPED_QUOTE)],
        ),
        Row(
            "call_token_after_complete_json_ends_it",
            harmony_call("apply_patch", '{"input": "a"}') + harmony_call("get_time", "{}"),
            [call("apply_patch", '{"input": "a"}'), call("get_time", "{}")],
        ),
        restart_row(w, f'{START}assistant{CHANNEL}commentary to=functions.get_weather{MESSAGE}{{"city": '),
        Row(
            "cut_before_call_token_keeps_complete_call",
            harmony_call("get_time", "{}")[: -len(CALL)],
            [call("get_time", "{}")],
        ),
        Row(
            "constrain_missing",
            f"{CHANNEL}commentary to=functions.get_time{MESSAGE}{{}}{CALL}",
            [call("get_time", "{}")],
        ),
        Row(
            "end_token_instead_of_call",
            f"{CHANNEL}commentary to=functions.get_time {CONSTRAIN}json{MESSAGE}{{}}{END}",
            [call("get_time", "{}")],
        ),
        Row(
            "empty_message_is_a_call_without_arguments",
            f"{CHANNEL}commentary to=functions.get_time{MESSAGE}{CALL}",
            [call("get_time", "{}")],
        ),
        Row(
            "builtin_recipient_undeclared",
            f'{CHANNEL}analysis to=browser.search{MESSAGE}{{"q": "x"}}{CALL}',
            [commentary('{"q": "x"}')],
        ),
        Row(
            "python_recipient_shows_its_code",
            f"{CHANNEL}analysis to=python{MESSAGE}print(sum(range(10))){CALL}",
            [commentary("print(sum(range(10)))")],
        ),
        Row(
            "builtin_recipient_in_role",
            f'{START}assistant to=browser.open{CHANNEL}analysis code{MESSAGE}{{"id": 3}}{CALL}',
            [commentary('{"id": 3}')],
        ),
        Row(
            "undeclared_function_then_declared_call",
            f"{CHANNEL}commentary to=functions.launch_rocket {CONSTRAIN}json{MESSAGE}{{}}{CALL}"
            + harmony_call("get_time", "{}"),
            [commentary("{}"), call("get_time", "{}")],
        ),
        Row(
            "constrain_without_space",
            f'{CHANNEL}commentary to=functions.get_weather{CONSTRAIN}json{MESSAGE}{{"city": "Rome"}}{CALL}',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        Row(
            "recipient_in_role_constrain_without_space",
            f'{START}assistant to=functions.get_weather{CHANNEL}commentary{CONSTRAIN}json{MESSAGE}{{"city": "Rome"}}{CALL}',
            [call("get_weather", '{"city": "Rome"}')],
        ),
        as_text("message_without_recipient_is_text", f"{CHANNEL}commentary{MESSAGE}{{}}{CALL}"),
        as_text(
            "header_with_text_after_message",
            f"{CHANNEL}commentary to=functions.get_time{MESSAGE}now {{}}{CALL}",
        ),
    ]


def harmony_reasoning_rows() -> list[dict[str, Any]]:
    weather = harmony_call("get_weather", '{"location":"San Francisco"}')

    def row(name: str, output: str, expect: Sequence[Seg]) -> dict[str, Any]:
        return {"name": name, "output": output, "thinking": None, "expect": merge(expect)}

    analysis = f"{CHANNEL}analysis{MESSAGE}User asks 2+2. Simple.{END}"
    transcript = f"{CHANNEL}analysis{MESSAGE}Write it.{END}"
    final = f"{START}assistant{CHANNEL}final{MESSAGE}2 + 2 = 4.{RETURN}"
    return [
        row(
            "analysis_then_final", analysis + final, [reasoning("User asks 2+2. Simple."), text("2 + 2 = 4.")]
        ),
        row(
            "analysis_then_call",
            f"{CHANNEL}analysis{MESSAGE}Need to use function get_weather.{END}" + weather,
            [reasoning("Need to use function get_weather."), text(weather)],
        ),
        row(
            "preamble_then_call",
            f"{CHANNEL}commentary{MESSAGE}Checking the weather.{END}" + weather,
            [commentary("Checking the weather."), text(weather)],
        ),
        row(
            "recipient_in_role_header",
            analysis + harmony_call("get_time", "{}", in_role=True),
            [reasoning("User asks 2+2. Simple."), text(harmony_call("get_time", "{}", in_role=True))],
        ),
        row(
            "first_message_is_a_call",
            harmony_call("get_time", "{}", first=True),
            [text(harmony_call("get_time", "{}", first=True))],
        ),
        row("final_only", f"{CHANNEL}final{MESSAGE}Hello there.{RETURN}", [text("Hello there.")]),
        row("plain_text_without_markup", "Just text, no channels.", [text("Just text, no channels.")]),
        row(
            "two_analysis_messages_join",
            analysis + f"{START}assistant{CHANNEL}analysis{MESSAGE} More.{END}" + final,
            [reasoning("User asks 2+2. Simple. More."), text("2 + 2 = 4.")],
        ),
        row(
            "cut_inside_analysis", f"{CHANNEL}analysis{MESSAGE}Thinking about", [reasoning("Thinking about")]
        ),
        row(
            "cut_inside_header_drops_it",
            analysis + f"{START}assistant{CHANNEL}fin",
            [reasoning("User asks 2+2. Simple.")],
        ),
        row(
            "cut_inside_call_message",
            analysis + weather[: -len(CALL) - 3],
            [reasoning("User asks 2+2. Simple."), text(weather[: -len(CALL) - 3])],
        ),
        row(
            "call_cut_by_next_header_is_commentary_text",
            weather[: -len(CALL)] + final,
            [commentary(weather[: -len(CALL)]), text("2 + 2 = 4.")],
        ),
        row(
            "call_then_final_without_stop",
            weather + final,
            [text(weather + "2 + 2 = 4.")],
        ),
        row(
            "preamble_call_and_final",
            f"{CHANNEL}commentary{MESSAGE}On it.{END}"
            + weather
            + f"{START}assistant{CHANNEL}final{MESSAGE}Sunny.{RETURN}",
            [commentary("On it."), text(weather + "Sunny.")],
        ),
        row(
            "stray_message_and_constrain_tokens_in_body_are_text",
            f"{CHANNEL}final{MESSAGE}a {MESSAGE} b {CONSTRAIN} c{RETURN}",
            [text(f"a {MESSAGE} b {CONSTRAIN} c")],
        ),
        row(
            "lookalike_markers_are_text",
            f"{CHANNEL}final{MESSAGE}x <| y <|foo|> <|star z <|{RETURN}",
            [text("x <| y <|foo|> <|star z <|")],
        ),
        row("lone_lt_at_end", f"{CHANNEL}final{MESSAGE}a <", [text("a <")]),
        row(
            "header_restarted",
            f"{START}assistant{START}assistant{CHANNEL}final{MESSAGE}Hi.{END}",
            [text("Hi.")],
        ),
        row(
            "channel_restarts_body_without_end",
            f"{CHANNEL}analysis{MESSAGE}think{CHANNEL}final{MESSAGE}answer",
            [reasoning("think"), text("answer")],
        ),
        row("headerless_message_token", f"{MESSAGE}bare answer{END}", [text("bare answer")]),
        row(
            "text_between_messages_is_content",
            analysis + "stray" + final,
            [reasoning("User asks 2+2. Simple."), text("stray2 + 2 = 4.")],
        ),
        row("end_tokens_only", f"{END}{RETURN}{CALL}", []),
        row(
            "empty_messages",
            f"{CHANNEL}analysis{MESSAGE}{END}{START}assistant{CHANNEL}final{MESSAGE}{RETURN}",
            [],
        ),
        row(
            "unknown_channel_is_the_answer",
            f"{CHANNEL}summary{MESSAGE}text{END}",
            [text("text")],
        ),
        row(
            "pretty_printed_call",
            harmony_call("get_weather", '{\n  "location": "Rome"\n}'),
            [text(harmony_call("get_weather", '{\n  "location": "Rome"\n}'))],
        ),
        row(
            "recipient_in_analysis_channel_is_a_call",
            f"{CHANNEL}analysis to=functions.get_time{MESSAGE}{{}}{CALL}",
            [text(f"{CHANNEL}analysis to=functions.get_time{MESSAGE}{{}}{CALL}")],
        ),
        row(
            "multibyte_text",
            f"{CHANNEL}analysis{MESSAGE}天气？{END}{START}assistant{CHANNEL}final{MESSAGE}晴天 ☀️{RETURN}",
            [reasoning("天气？"), text("晴天 ☀️")],
        ),
        # Only the end tokens of a message's own kind end it (issue 12, class 2).
        row(
            "analysis_mentions_call_token",
            f"{CHANNEL}analysis{MESSAGE}A call ends with {CALL}, then the tool answers.{END}"
            f"{START}assistant{CHANNEL}final{MESSAGE}Done.{RETURN}",
            [reasoning(f"A call ends with {CALL}, then the tool answers."), text("Done.")],
        ),
        row(
            "analysis_mentions_channel_final",
            f"{CHANNEL}analysis{MESSAGE}Answer in the {CHANNEL}final channel, briefly.{END}"
            f"{START}assistant{CHANNEL}final{MESSAGE}4.{RETURN}",
            [reasoning(f"Answer in the {CHANNEL}final channel, briefly."), text("4.")],
        ),
        row(
            "analysis_mentions_a_whole_start_header",
            f"{CHANNEL}analysis{MESSAGE}Messages begin {START}assistant{CHANNEL}final and so on.{END}"
            f"{START}assistant{CHANNEL}final{MESSAGE}Ok.{RETURN}",
            [reasoning(f"Messages begin {START}assistant{CHANNEL}final and so on."), text("Ok.")],
        ),
        row(
            "answer_mentions_channel_token_at_the_end",
            f"{CHANNEL}final{MESSAGE}The marker is {CHANNEL}commentary",
            [text(f"The marker is {CHANNEL}commentary")],
        ),
        row(
            "preamble_mentions_channel_token",
            f"{CHANNEL}commentary{MESSAGE}Switching to {CHANNEL}analysis soon.{END}",
            [commentary(f"Switching to {CHANNEL}analysis soon.")],
        ),
        row(
            "analysis_mentions_return_token",
            f"{CHANNEL}analysis{MESSAGE}The answer ends with {RETURN}.{END}"
            f"{START}assistant{CHANNEL}final{MESSAGE}ok{RETURN}",
            [reasoning(f"The answer ends with {RETURN}."), text("ok")],
        ),
        row(
            "answer_mentions_call_token",
            f"{CHANNEL}final{MESSAGE}Write {CALL} after the JSON.{RETURN}",
            [text(f"Write {CALL} after the JSON.")],
        ),
        # Call arguments that quote the markup (issue 12, class 2): the splitter follows the
        # JSON strings of a call body, so the message ends at the first end token outside one.
        *[
            row(
                name,
                transcript + harmony_call("write_file", args),
                [reasoning("Write it."), text(harmony_call("write_file", args))],
            )
            for name, args in (
                ("call_arguments_quote_call_token", json.dumps({"content": f"ends with {CALL} here"})),
                (
                    "call_arguments_quote_a_whole_header",
                    json.dumps({"content": f"{START}assistant{CHANNEL}final{MESSAGE}Hi{RETURN}"}),
                ),
                ("call_arguments_escaped_quote_then_call_token", _ESCAPED_QUOTE),
            )
        ],
        row(
            "call_arguments_quote_end_token_then_final",
            transcript
            + harmony_call("write_file", '{"content": "x<|end|>y"}')
            + f"{START}assistant{CHANNEL}final{MESSAGE}Done.{RETURN}",
            [
                reasoning("Write it."),
                text(harmony_call("write_file", '{"content": "x<|end|>y"}')),
                text("Done."),
            ],
        ),
        # A string that never closes runs to the end of the output: the whole message is one piece.
        row(
            "call_arguments_string_never_closed",
            transcript + harmony_call("write_file", '{"content": "open <|call|> and on')[: -len(CALL)],
            [
                reasoning("Write it."),
                text(harmony_call("write_file", '{"content": "open <|call|> and on')[: -len(CALL)]),
            ],
        ),
        # A body that is not JSON (code for a built-in tool) ends at its first end token.
        row(
            "non_json_call_body_ends_at_first_call_token",
            f'{CHANNEL}analysis to=python{MESSAGE}print("{CALL}"){CALL}',
            [text(f'{CHANNEL}analysis to=python{MESSAGE}print("{CALL}'), text('")')],
        ),
        row(
            "analysis_mentions_call_then_a_call",
            f"{CHANNEL}analysis{MESSAGE}I will end with {CALL} after the JSON.{END}"
            + harmony_call("get_time", "{}"),
            [reasoning(f"I will end with {CALL} after the JSON."), text(harmony_call("get_time", "{}"))],
        ),
    ]


# -- tables --------------------------------------------------------------------------------------


def _table(parser: str, rows: list[Row], bench_unit: str) -> dict[str, Any]:
    names = [r.name for r in rows]
    assert len(set(names)) == len(names), f"duplicate row names in {parser}"
    return {
        "stage": "tools",
        "parser": parser,
        "rows": [r.to_json() for r in rows],
        "bench": {"tools": TOOLS, "parts": [{"repeat": bench_unit}]},
    }


#: A realistic turn for the benchmark: a paragraph (with a comparison in it), then a small
#: call and a patch of a few hundred characters.
_PROSE = (
    "I'll look that up for you now. The config says the timeout must satisfy a < b, and the "
    "tests compare the retry count against the limit, so before changing anything I will read "
    "the current values and the weather service's answer for the city you named, then patch the "
    "file with the smallest change that keeps every existing caller working.\n"
)
_BIG_PATCH = C(
    "apply_patch",
    json.dumps(
        {
            "input": "*** Begin Patch\n*** Update File: src/client.py\n@@ def fetch(url, retries=3):\n"
            + "".join(
                f'-    timeout = {i}  # "old" value\n+    timeout = {i + 1}  # "new" value\n'
                for i in range(6)
            )
            + "*** End Patch"
        }
    ),
)
_CALLS = [PARIS, _BIG_PATCH]


def tables() -> dict[str, dict[str, Any]]:
    """Relative path under the corpus directory -> table."""
    v3 = DeepSeek("deepseek_v3", _v3_one, "\n")
    v31 = DeepSeek("deepseek_v31", _v31_one, "")
    hermes, llama, mistral, kimi = Hermes(), Llama3(), Mistral(), Kimi()

    def unit(w: Writer) -> str:
        return _PROSE + w.block(_CALLS, after_text=True)[0] + "\n"

    out = {
        "tools/hermes.json": _table("hermes", hermes_rows(), unit(hermes)),
        "tools/llama3_json.json": _table("llama3_json", llama3_rows(), unit(llama)),
        "tools/mistral.json": _table("mistral", mistral_rows(), unit(mistral)),
        "tools/deepseek_v3.json": _table("deepseek_v3", deepseek_rows(v3), unit(v3)),
        "tools/deepseek_v31.json": _table("deepseek_v31", deepseek_rows(v31), unit(v31)),
        "tools/kimi_k2.json": _table("kimi_k2", kimi_rows(), unit(kimi)),
        "tools/harmony.json": _table("harmony", harmony_tool_rows(), unit(Harmony())),
    }
    turn = (
        f"{CHANNEL}analysis{MESSAGE}{_PROSE}{END}{START}assistant{CHANNEL}commentary{MESSAGE}Checking.{END}"
        + harmony_call("apply_patch", _BIG_PATCH.args)
        + f"{START}assistant{CHANNEL}final{MESSAGE}{_PROSE}{RETURN}"
    )
    out["reasoning/harmony.json"] = {
        "stage": "reasoning",
        "parser": "harmony",
        "rows": harmony_reasoning_rows(),
        "bench": {"thinking": None, "parts": [{"repeat": turn}]},
    }
    return out


def render(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    for rel, table in tables().items():
        (CORPUS / rel).write_text(render(table), encoding="utf-8")


if __name__ == "__main__":
    main()
