"""Times the reasoning + tool-call parsers of two peer servers, SGLang and vLLM, on one model output.

Run with the peer environment's Python (``bash .ci/parser-peers.sh`` prints it); accord is not
imported here. The job is a JSON object read from the file named on the command line, or from
stdin::

    {"family": "glm47" | "hermes", "output": "...", "tools": [{"name": ..., "parameters": {...}}],
     "truth": {"reasoning": "...", "content": "...", "calls": [[name, arguments], ...]},
     "delta": 4, "repeat": {"streamed": 3, "whole": 3}, "stream_limit_s": 60,
     "fallback": {"sglang": <streamed result>, "vllm": <streamed result>}}

and one JSON object is printed: for each peer, ``streamed`` and ``whole``, each with the best
process CPU time of the runs (gc off during a run), the bytes parsed and whether the result is the
ground truth (reasoning text, content text, every call's name and JSON arguments), the first
difference if not.

How each server is driven, as its own chat serving code drives it:

- SGLang (``sglang.srt.entrypoints.openai.serving_chat``): a ``ReasoningParser`` (``qwen3`` for
  Hermes outputs, ``glm45`` for GLM-4.7, forced into reasoning for GLM, whose prompt opens the
  block) and a ``FunctionCallParser`` (``hermes`` / ``glm47``). Streamed: each delta goes to
  ``ReasoningParser.parse_stream_chunk``, its normal text to ``FunctionCallParser.parse_stream_chunk``
  (which calls the detector's ``parse_streaming_increment``); the last delta also flushes both with
  ``parse_stream_end``. Whole: ``ReasoningParser.parse_non_stream``, then
  ``FunctionCallParser.parse_non_stream`` (the detector's ``detect_and_parse``) when
  ``has_tool_call``. SGLang's parsers read text only and take no tokenizer.
- vLLM (``vllm.entrypoints.openai.chat_completion``): the ``Parser`` class that
  ``ParserManager.get_parser`` composes from the reasoning parser (``qwen3`` / ``glm45``) and the
  tool parser (``hermes`` / ``glm47``), with auto tool choice. Streamed: ``Parser.parse_delta``
  per delta (the reasoning parser's ``extract_reasoning_streaming``, then the tool parser's
  ``extract_tool_calls_streaming`` on the content side), ``finished=True`` on the last. Whole:
  ``set_prompt_token_ids``, then ``Parser.parse`` (``extract_reasoning``, then
  ``extract_tool_calls``). The request is a ``ChatCompletionRequest`` with the tools and
  ``tool_choice="auto"``.

vLLM's parsers need a tokenizer only to look up the ids of their special tokens (``get_vocab``),
to decode single token ids and to list the special tokens (``all_special_tokens``). No model
tokenizer can be downloaded here, so ``Vocab`` stands in: it knows the model's added tokens that
the outputs contain, with the ids of the Qwen3 and GLM-4.7 vocabularies, and a few chat-frame
special tokens; every other piece of text is one token with an id the vocabulary does not hold,
which decodes to nothing (the parsers use such text only to count tokens). Deltas are cut the way a
tokenizer would: each such added token is one delta carrying its id, the text between them goes in
``delta``-character pieces. Both peers get the same deltas.

A streamed run that would take more than ``stream_limit_s`` (vLLM's Hermes tool parser rescans the
whole text per delta) is stopped once its projected time passes the limit; the result is then the
``fallback`` given in the job (the caller's result on the 100 KB output), marked so.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any, NamedTuple

#: The added tokens each family's outputs contain, with their ids in the model's vocabulary.
ADDED: dict[str, dict[str, int]] = {
    "hermes": {"<tool_call>": 151657, "</tool_call>": 151658, "<think>": 151667, "</think>": 151668},
    "glm47": {
        "<think>": 151350,
        "</think>": 151351,
        "<tool_call>": 151352,
        "</tool_call>": 151353,
        "<arg_key>": 151356,
        "</arg_key>": 151357,
        "<arg_value>": 151358,
        "</arg_value>": 151359,
    },
}
#: Chat-frame special tokens (none occurs in the outputs; a parser may still scan for them).
FRAME: dict[str, dict[str, int]] = {
    "hermes": {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645},
    "glm47": {
        "<|endoftext|>": 151329,
        "[gMASK]": 151331,
        "<sop>": 151333,
        "<|system|>": 151335,
        "<|user|>": 151336,
        "<|assistant|>": 151337,
        "<|observation|>": 151338,
    },
}
#: The id every other piece of text gets: one the vocabulary does not hold.
TEXT_ID = 1000
#: The last ids of the prompt: the generation prompt (GLM-4.7's opens the reasoning block).
PROMPT: dict[str, list[int]] = {"hermes": [151644, TEXT_ID, TEXT_ID], "glm47": [151337, 151350]}
#: Parser names: (SGLang reasoning, SGLang tool, vLLM reasoning, vLLM tool).
NAMES: dict[str, tuple[str, str, str, str]] = {
    "hermes": ("qwen3", "hermes", "qwen3", "hermes"),
    "glm47": ("glm45", "glm47", "glm45", "glm47"),
}
PEERS = ("sglang", "vllm")

Delta = tuple[str, list[int]]


class Vocab:
    """The part of a tokenizer that vLLM's parsers read: special-token ids and single-id decoding."""

    def __init__(self, family: str) -> None:
        self._vocab = {**FRAME[family], **ADDED[family]}
        self._text = {i: t for t, i in self._vocab.items()}
        self.all_special_tokens = list(FRAME[family])
        self.all_special_ids = list(FRAME[family].values())

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return "".join(self._text.get(i, "") for i in ids)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        return self._vocab.get(token)

    def __len__(self) -> int:
        return max(self._vocab.values()) + 1


def split(family: str, text: str, size: int) -> list[Delta]:
    """Deltas as a tokenizer cuts them: each added token alone with its id, other text in ``size`` pieces."""
    added = ADDED[family]
    pattern = re.compile("|".join(re.escape(t) for t in sorted(added, key=len, reverse=True)))
    deltas: list[Delta] = []
    pos = 0
    for m in pattern.finditer(text):
        deltas.extend((text[i : min(i + size, m.start())], [TEXT_ID]) for i in range(pos, m.start(), size))
        deltas.append((m.group(), [added[m.group()]]))
        pos = m.end()
    deltas.extend((text[i : i + size], [TEXT_ID]) for i in range(pos, len(text), size))
    return deltas


class Parsed:
    """What a run produced: reasoning and content text, and each call's name and argument text."""

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: dict[int, list[str]] = {}

    def call(self, index: int, name: str | None, arguments: str | None) -> None:
        slot = self.calls.setdefault(index, ["", ""])
        if name:
            slot[0] += name
        if arguments:
            slot[1] += arguments

    def mismatch(self, truth: dict[str, Any]) -> tuple[str, bool]:
        """How the result differs from the ground truth ("" when it does not), and whether only in whitespace."""
        issues: list[str] = []
        whitespace_only = True
        for field, got in (("reasoning", "".join(self.reasoning)), ("content", "".join(self.content))):
            want: str = truth[field]
            if got == want:
                continue
            if got.split() == want.split():
                issues.append(f"{field}: differs in whitespace only ({len(got)} chars, want {len(want)})")
                continue
            whitespace_only = False
            at = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            issues.append(f"{field}: {len(got)} chars, want {len(want)}, first difference at {at}")
        calls = [self.calls[i] for i in sorted(self.calls)]
        want_calls = truth["calls"]
        if len(calls) != len(want_calls):
            whitespace_only = False
            issues.append(f"calls: {len(calls)}, want {len(want_calls)}")
        for n, ((name, arguments), (want_name, want_args)) in enumerate(zip(calls, want_calls, strict=False)):
            try:
                args = json.loads(arguments)
            except ValueError:
                args = arguments
            if name != want_name or args != want_args:
                whitespace_only = False
                issues.append(f"call {n}: {name} {str(args)[:60]!r}, want {want_name}")
                break
        return "; ".join(issues), whitespace_only and bool(issues)


class TooSlow(Exception):
    def __init__(self, projected: float) -> None:
        super().__init__(f"projected {projected:.0f} s")
        self.projected = projected


Watch = Callable[[int], None]


def watcher(total: int, limit: float) -> tuple[int, Watch]:
    """A check, run every ``step`` deltas, that stops a run whose projected CPU time passes ``limit``.

    The projection takes the growth of the time so far (between half and all of the deltas seen)
    as the exponent for the rest, so a quadratic parser is projected as one.
    """
    step = max(total // 20, 1)
    seen: dict[int, float] = {}
    start = [0.0]

    def watch(i: int) -> None:
        if i == 0:
            start[0] = time.process_time()
        k = i // step
        spent = time.process_time() - start[0]
        seen[k] = spent
        if spent > limit:
            raise TooSlow(spent * total / max(i, 1))
        if k >= 2 and k % 2 == 0 and seen.get(k // 2, 0.0) > 0.0:
            growth = min(max(math.log(spent / seen[k // 2]) / math.log(2), 1.0), 2.0)
            projected = spent * (total / i) ** growth
            if projected > limit:
                raise TooSlow(projected)

    return step, watch


def sglang_runs(family: str, tools: list[dict[str, Any]]) -> tuple[Callable[..., None], Callable[..., None]]:
    from sglang.srt.entrypoints.openai.protocol import Function, Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    reasoning_name, tool_name, _, _ = NAMES[family]
    specs = [
        Tool(type="function", function=Function(name=t["name"], parameters=t["parameters"])) for t in tools
    ]
    # GLM-4.7's generation prompt ends with <think>: the output starts inside the block.
    force = family == "glm47"

    def streamed(deltas: list[Delta], out: Parsed | None, watch: Watch | None = None, step: int = 1) -> None:
        reasoner = ReasoningParser(reasoning_name, True, force, None, tool_call_parser_active=True)
        caller = FunctionCallParser(tools=specs, tool_call_parser=tool_name)
        last = len(deltas) - 1
        for i, (text, _ids) in enumerate(deltas):
            reasoning, normal = reasoner.parse_stream_chunk(text)
            if i == last:
                end_reasoning, end_normal = reasoner.parse_stream_end()
                reasoning = (reasoning or "") + (end_reasoning or "")
                normal = (normal or "") + (end_normal or "")
            normal, calls = caller.parse_stream_chunk(normal or "")
            if i == last:
                end_text, end_calls = caller.parse_stream_end()
                normal = (normal or "") + end_text
                calls = list(calls) + end_calls
            if out is not None:
                if reasoning:
                    out.reasoning.append(reasoning)
                if normal:
                    out.content.append(normal)
                for item in calls:
                    out.call(item.tool_index, item.name, item.parameters)
            if watch is not None and i % step == 0:
                watch(i)

    def whole(text: str, ids: list[int], out: Parsed | None) -> None:
        reasoner = ReasoningParser(reasoning_name, False, force, None, tool_call_parser_active=True)
        reasoning, normal = reasoner.parse_non_stream(text)
        normal = normal or ""
        caller = FunctionCallParser(tools=specs, tool_call_parser=tool_name)
        calls: list[Any] = []
        if caller.has_tool_call(normal):
            normal, calls = caller.parse_non_stream(normal)
        if out is not None:
            out.reasoning.append(reasoning or "")
            out.content.append(normal or "")
            for n, item in enumerate(calls):
                out.call(n, item.name, item.parameters)

    return streamed, whole


def vllm_runs(family: str, tools: list[dict[str, Any]]) -> tuple[Callable[..., None], Callable[..., None]]:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    _, _, reasoning_name, tool_name = NAMES[family]
    parser_cls = ParserManager.get_parser(
        tool_parser_name=tool_name, reasoning_parser_name=reasoning_name, enable_auto_tools=True
    )
    assert parser_cls is not None
    request = ChatCompletionRequest(
        model="peer",
        messages=[{"role": "user", "content": "Write the modules and check the weather."}],
        tools=[
            {"type": "function", "function": {"name": t["name"], "parameters": t["parameters"]}}
            for t in tools
        ],
        tool_choice="auto",
    )
    vocab = Vocab(family)
    prompt = PROMPT[family]

    def make() -> Any:
        return parser_cls(vocab, request.tools, chat_template_kwargs={}, model_config=None)

    def streamed(deltas: list[Delta], out: Parsed | None, watch: Watch | None = None, step: int = 1) -> None:
        parser = make()
        last = len(deltas) - 1
        for i, (text, ids) in enumerate(deltas):
            message = parser.parse_delta(text, ids, request, prompt, finished=i == last)
            if out is not None and message is not None:
                if message.reasoning:
                    out.reasoning.append(message.reasoning)
                if message.content:
                    out.content.append(message.content)
                for call in message.tool_calls or ():
                    function = call.function
                    if function is not None:
                        out.call(call.index, function.name, function.arguments)
            if watch is not None and i % step == 0:
                watch(i)

    def whole(text: str, ids: list[int], out: Parsed | None) -> None:
        parser = make()
        parser.set_prompt_token_ids(prompt)
        reasoning, content, calls = parser.parse(
            text, request, enable_auto_tools=True, model_output_token_ids=ids
        )
        if out is not None:
            out.reasoning.append(reasoning or "")
            out.content.append(content or "")
            for n, call in enumerate(calls or ()):
                out.call(n, call.name, call.arguments)

    return streamed, whole


RUNS = {"sglang": sglang_runs, "vllm": vllm_runs}


def cpu(run: Callable[[], object], repeat: int, budget: float) -> float:
    """Best process CPU time of up to ``repeat`` runs, gc off during each; stops once ``budget`` is spent.

    One collection before the runs, not one before each: a full collection walks the whole heap and
    leaves the caches cold for the run after it, which costs a process with a large heap (pytest's,
    accord's side) more than a small one."""
    best = float("inf")
    spent = 0.0
    gc.collect()
    for _ in range(repeat):
        gc.disable()
        try:
            start = time.process_time()
            run()
            took = time.process_time() - start
        finally:
            gc.enable()
        best = min(best, took)
        spent += took
        if spent > budget:
            break
    return best


class Timed(NamedTuple):
    seconds: float
    mismatch: str
    whitespace_only: bool

    def report(self, seconds: float, size: int) -> dict[str, Any]:
        return {
            "seconds": seconds,
            "bytes": size,
            "correct": not self.mismatch,
            "whitespace_only": self.whitespace_only,
            "mismatch": self.mismatch,
        }


def checked(run: Callable[[Parsed], None], truth: dict[str, Any]) -> Timed:
    """One run that keeps what the parser produced, timed like ``cpu``, and its difference from the truth."""
    out = Parsed()
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        run(out)
        took = time.process_time() - start
    finally:
        gc.enable()
    return Timed(took, *out.mismatch(truth))


def measure(peer: str, job: dict[str, Any]) -> dict[str, Any]:
    family: str = job["family"]
    text: str = job["output"]
    truth: dict[str, Any] = job["truth"]
    repeat: dict[str, int] = job.get("repeat", {"streamed": 3, "whole": 3})
    limit = float(job.get("stream_limit_s", 60.0))
    deltas = split(family, text, int(job.get("delta", 4)))
    ids = [i for _, delta_ids in deltas for i in delta_ids]
    size = len(text.encode())
    streamed, whole = RUNS[peer](family, job["tools"])
    result: dict[str, Any] = {"version": version(peer), "deltas": len(deltas)}

    step, watch = watcher(len(deltas), limit)
    try:
        first = checked(lambda out: streamed(deltas, out, watch, step), truth)
    except TooSlow as e:
        fallback = job.get("fallback", {}).get(peer)
        note = f"not run at this size: projected {e.projected:.0f} s CPU (> {limit:.0f} s)"
        result["streamed"] = (
            {**fallback, "note": note + "; figure from the 100 KB output"} if fallback else {"note": note}
        )
    else:
        # A slow parser gets one run: the checked one (the result it keeps costs it little).
        best = first.seconds
        if first.seconds < 5.0:
            best = min(best, cpu(lambda: streamed(deltas, None), repeat["streamed"], 10.0))
        result["streamed"] = first.report(best, size)

    done = checked(lambda out: whole(text, ids, out), truth)
    best = min(done.seconds, cpu(lambda: whole(text, ids, None), repeat["whole"], 10.0))
    result["whole"] = done.report(best, size)
    return result


def main() -> None:
    with open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin as f:
        job = json.load(f)
    # The peers log to stdout; only the result goes there.
    stdout = os.dup(1)
    os.dup2(2, 1)
    results: dict[str, Any] = {}
    try:
        for peer in job.get("peers", PEERS):
            try:
                results[peer] = measure(peer, job)
            except Exception as e:
                traceback.print_exc()
                results[peer] = {"error": f"{type(e).__name__}: {e}"[:300]}
    finally:
        sys.stdout.flush()
        os.dup2(stdout, 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
