"""Linear cost on hostile outputs for the tool parsers and the reasoning splitters (SPEC P8).

The realistic outputs are measured by ``tests/benchmarks/test_parser_bench.py``; these are
outputs built to defeat a parser that re-reads what it has consumed: one huge argument,
openers restarted again and again, streamed calls abandoned again and again, markup that
keeps almost matching, long runs of whitespace where a closer is awaited. 400 KB may cost at most 20x 40 KB, streamed in
4-character chunks and whole (CPU time, best of interleaved rounds). A linear parser measures about
10x; the limit leaves room for a noisy machine (the same code measured 7.7x and 14.4x in two runs
here), and a parser that re-reads what it consumed measures about 100x.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.tools import tool_parser
from tests.parsers.json_tool_helpers import OFFERED

BIG = 400_000
LIMIT = 20.0
#: Below this a whole-text parse of the small input is a few C scans: its ratio measures caches.
NOISE_S = 0.004

K_SB, K_CB, K_ARG = "<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>"
K3_TOOLS = "<|open|>tools<|sep|>"
DS = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}"

#: (stage, parser, prefix, unit repeated, suffix)
CASES: list[tuple[str, str, str, str, str]] = [
    (
        "tools",
        "hermes",
        '<tool_call>{"name": "apply_patch", "arguments": {"input": "',
        'a\\"b <tool_call> {[ ',
        '"}}</tool_call>',
    ),
    ("tools", "hermes", "", '<tool_call>{"name": "get_time", "argu', ""),
    ("tools", "hermes", "", "<tool_call> tags ", ""),
    # Calls a one-step read of whole text tries first: each opener looks ahead for a closer.
    ("tools", "hermes", "", "<tool_call>{", "</tool_call>"),
    ("tools", "hermes", "", '<tool_call>{"name": "get_time", "arguments": {"a": 1}</tool_call>', ""),
    # Calls that fail again and again: at a restart quoted in their arguments, at junk after
    # a payload, at invalid JSON.
    ("tools", "hermes", "", '<tool_call>{"name": "get_time", "arguments": {"a": "x ', ""),
    ("tools", "deepseek_v31", "", "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{} x", ""),
    ("tools", "mistral", "", '[TOOL_CALLS]get_time[ARGS]{"a": x', ""),
    (
        "tools",
        "kimi_k2",
        K_SB + K_CB + "functions.get_time:0" + K_ARG + '{"a": "',
        "x <|tool_call_begin|> ",
        "",
    ),
    ("tools", "kimi_k2", "", K_SB + " \n", ""),
    ("tools", "kimi_k2", K_SB + K_CB + "functions.get_time:0" + K_ARG, '{"a": "<|tool_call_end|>"}, ', ""),
    ("tools", "llama3_json", "", '{"name": "get_time", "parameters": {}}; ', ""),
    ("tools", "mistral", '[TOOL_CALLS]get_time[ARGS]{"a": ', "[", ""),
    ("tools", "deepseek_v3", DS, "\n", ""),
    ("tools", "harmony", "", '<|channel|>commentary to=functions.get_time<|message|>{"a": "<|call|>"}', ""),
    ("reasoning", "harmony", "", "<|start|>assistant<|channel|>analysis<|message|>x <| y<|end|>", ""),
    ("reasoning", "harmony", "<|start|>assistant", " to=functions.x <|constrain|>", ""),
    # Markup quoted inside an open value is data (issue 12): each quoted marker is decided
    # from the value's last few characters, never by rereading the value.
    (
        "tools",
        "glm47",
        "<tool_call>get_time<arg_key>a</arg_key><arg_value>",
        "</tool_call> <tool_call> x ",
        "",
    ),
    (
        "tools",
        "qwen3_coder",
        "<tool_call>\n<function=get_time>\n<parameter=a>\n",
        "</tool_call> <function=x> ",
        "",
    ),
    ("tools", "qwen3_coder", "<function=get_time>\n<parameter=a>\n", "</function> <tool_call> y ", ""),
    ("tools", "llama3_pythonic", "[get_time(a=", '"x ] ) ( [ \\" ", ', ""),
    # Invoke openers quoted inside one DSML value: each is decided without rereading the value.
    (
        "tools",
        "deepseek_v32",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="apply_patch">\n<｜DSML｜parameter name="input" string="true">',
        '<｜DSML｜invoke name="x"> a ',
        "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    ("reasoning", "harmony", "<|channel|>analysis<|message|>", "mentions <|channel|>final and ", "<|end|>"),
    # A call body's JSON strings are followed across chunks; markers inside them are data.
    (
        "reasoning",
        "harmony",
        '<|channel|>commentary to=functions.get_time<|message|>{"a": "',
        'x \\" <|call|> <|start|>assistant ',
        '"}<|call|>',
    ),
    # Gemma 4: markup quoted inside one <|"|> string, restarted calls, deep nesting.
    (
        "tools",
        "gemma4",
        '<|tool_call>call:get_time{a:<|"|>',
        "<tool_call|> <|tool_call> x ",
        '<|"|>}<tool_call|>',
    ),
    ("tools", "gemma4", "", "<|tool_call>call:get_time{a:", ""),
    ("tools", "gemma4", "", '<|tool_call>call:get_time{a:<|"|>x<|"|>,b:[1,{c:true}]}<tool_call|> ', ""),
    ("tools", "gemma4", "<|tool_call>call:get_time{a:", "[", "<tool_call|>"),
    # An opener mentioned in reasoning is held until the block closes.
    ("reasoning", "gemma4", "<|channel>thought\n", "mention <|tool_call> and ", "<channel|>"),
    ("reasoning", "mistral", "[THINK]", "mention [TOOL_CALLS] and ", "[/THINK]"),
    # Kimi K3: closers quoted inside one value (each judged by what follows it), calls that
    # never close a value (one search answers them all), text between calls (each value's last
    # closer found before the next call), headers with no <|sep|>, restarted
    # sections, openers mentioned in reasoning, response frames dropped again and again.
    (
        "tools",
        "kimi_k3",
        K3_TOOLS
        + '<|open|>call tool="get_time" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>',
        "<|close|>argument<|sep|><|close|>call<|sep|> <|close|>tools<|sep|> x ",
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
    ),
    (
        "tools",
        "kimi_k3",
        K3_TOOLS,
        '<|open|>call tool="get_time" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>v<|close|>call<|sep|>',
        "<|close|>tools<|sep|>",
    ),
    ("tools", "kimi_k3", K3_TOOLS, '<|open|>call tool="get_time" ', ""),
    (
        "tools",
        "kimi_k3",
        K3_TOOLS,
        '<|open|>call tool="get_time" index="1"<|sep|><|open|>argument key="a" type="string"<|sep|>'
        "v<|close|>argument<|sep|><|close|>call<|sep|> text between calls ",
        "<|close|>tools<|sep|>",
    ),
    ("tools", "kimi_k3", "", K3_TOOLS + '<|open|>call tool="get_time"', ""),
    ("reasoning", "kimi_k3", "", "mention <|open|>tools<|sep|> and ", "<|close|>think<|sep|>"),
    (
        "reasoning",
        "kimi_k3",
        "x<|close|>think<|sep|>",
        "<|open|>response<|sep|>y<|close|>response<|sep|>",
        "",
    ),
]


def _runner(stage: str, name: str) -> Callable[[list[str]], None]:
    def run(chunks: list[str]) -> None:
        p = reasoning_parser(name)(None) if stage == "reasoning" else tool_parser(name)(OFFERED)
        for chunk in chunks:
            p.feed(chunk)
        p.finish()

    return run


def _cost(run: Callable[[], None]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        run()
        return time.process_time() - start
    finally:
        gc.enable()


def _ratio(small: Callable[[], None], big: Callable[[], None]) -> tuple[float, float]:
    best_small = best_big = float("inf")
    for _ in range(3):
        best_small = min(best_small, _cost(small))
        best_big = min(best_big, _cost(big))
    return best_big / best_small, best_small


@pytest.mark.benchmark
@pytest.mark.parametrize(("stage", "name", "prefix", "unit", "suffix"), CASES)
def test_hostile_output_costs_linear_time(stage: str, name: str, prefix: str, unit: str, suffix: str) -> None:
    """A rescanning parser costs 100x here; a linear one about 10x."""
    run = _runner(stage, name)
    big = prefix + unit * (BIG // len(unit)) + suffix
    small = prefix + unit * (BIG // 10 // len(unit)) + suffix
    big_chunks = [big[i : i + 4] for i in range(0, len(big), 4)]
    small_chunks = [small[i : i + 4] for i in range(0, len(small), 4)]
    streamed, _ = _ratio(lambda: run(small_chunks), lambda: run(big_chunks))
    whole, whole_small = _ratio(lambda: run([small]), lambda: run([big]))
    print(f"\n  {stage}/{name} {unit[:24]!r}: streamed {streamed:.1f}x, whole {whole:.1f}x")
    assert streamed <= LIMIT
    if whole_small >= NOISE_S:
        assert whole <= LIMIT
