"""The scripted engine (SPEC E2): plays outputs chosen by rules from a JSON file.

Rules file::

    {"rules": [
      {"when": {"last_input": "<regex>", "last_item_type": "message", "tool": "<regex>"},
       "output": "<raw model text, markup included>",
       "chunks": ["explicit", "chunks"], "chunk_chars": 4,
       "first_chunk_delay_s": 0, "chunk_delay_s": 0,
       "finish": "stop|length",
       "fail": {"after_chunks": 2, "kind": "engine_error|context_length_exceeded"},
       "cached_tokens": 0}
    ]}

The first rule whose ``when`` fields all match wins; a rule without ``when`` always
matches. Token ids come from :mod:`accord.engine.tokens`, so usage is exact.
``max_tokens`` cuts the output at that many tokens and finishes with ``length``. The
request's stop strings cut it where the first of them is completed, as an engine stops
there, and the one that matched is reported on ``Finished``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Literal

import anyio
import anyio.lowlevel
import msgspec

from accord.engine import tokens
from accord.engine.protocol import EngineCapabilities, GenerationRequest
from accord.errors import ConfigError
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput


class When(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    last_input: str | None = None
    last_item_type: str | None = None
    tool: str | None = None


class Fail(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    after_chunks: int = 0
    kind: Literal["engine_error", "context_length_exceeded", "upstream_error"] = "engine_error"
    message: str | None = None


class Rule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    output: str = ""
    when: When | None = None
    chunks: list[str] | None = None
    chunk_chars: int = 4
    first_chunk_delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    finish: Literal["stop", "length"] = "stop"
    fail: Fail | None = None
    cached_tokens: int = 0

    def split(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        size = max(1, self.chunk_chars)
        return [self.output[i : i + size] for i in range(0, len(self.output), size)]


class Script(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    rules: list[Rule]


class ScriptError(ConfigError):
    """The rules file is not valid."""


def load_script(path: Path) -> Script:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Script)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ScriptError(f"{path}: {exc}") from exc


_FALLBACK = Rule(output="")


class ScriptedEngine:
    def __init__(
        self, script: Script, *, model_name: str = "scripted", max_context: int | None = None
    ) -> None:
        self.script = script
        self._model_name = model_name
        self.max_context = max_context
        self._compiled = [self._compile(rule.when) for rule in script.rules]
        #: Requests whose generation was stopped early by the consumer (cancellation).
        self.cancelled = 0
        self.started = 0

    @staticmethod
    def _compile(when: When | None) -> tuple[re.Pattern[str] | None, str | None, re.Pattern[str] | None]:
        if when is None:
            return None, None, None
        try:
            last = re.compile(when.last_input, re.S) if when.last_input is not None else None
            tool = re.compile(when.tool) if when.tool is not None else None
        except re.error as exc:
            raise ScriptError(f"bad regex in rule: {exc}") from exc
        return last, when.last_item_type, tool

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()  # it plays what it was given: nothing to constrain or tokenise

    def choose(self, request: GenerationRequest) -> Rule:
        hints = request.hints
        for rule, (last, item_type, tool) in zip(self.script.rules, self._compiled, strict=True):
            if last is not None and not last.search(hints.last_input):
                continue
            if item_type is not None and item_type != hints.last_item_type:
                continue
            if tool is not None and not any(tool.search(name) for name in hints.tool_names):
                continue
            return rule
        return _FALLBACK

    async def count_tokens(self, prompt: str) -> int:
        return tokens.count(prompt)

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        self.started += 1
        prompt_tokens = tokens.count(request.prompt)
        if self.max_context is not None and prompt_tokens > self.max_context:
            yield EngineFailed(
                failure="context_length_exceeded",
                message=(
                    f"This model's maximum context length is {self.max_context} tokens. "
                    f"However, your messages resulted in {prompt_tokens} tokens. "
                    "Please reduce the length of the messages."
                ),
                prompt_tokens=prompt_tokens,
            )
            return
        rule = self.choose(request)
        chunks, matched = stop_cut(rule.split(), request.stop)
        budget = request.max_tokens
        produced = 0
        finished_normally = False
        try:
            for n, text in enumerate(chunks):
                if rule.fail is not None and n == rule.fail.after_chunks:
                    break
                delay = rule.first_chunk_delay_s if n == 0 else rule.chunk_delay_s
                if delay > 0:
                    await anyio.sleep(delay)
                elif n % 64 == 0:
                    await anyio.lowlevel.checkpoint()
                ids = tokens.token_ids(text)
                if budget is not None and produced + len(ids) > budget:
                    cut = _cut_to_tokens(text, budget - produced)
                    if cut:
                        yield Chunk(text=cut, token_ids=tokens.token_ids(cut))
                        produced += len(tokens.token_ids(cut))
                    finished_normally = True
                    yield Finished(
                        reason="length", prompt_tokens=prompt_tokens, cached_tokens=rule.cached_tokens
                    )
                    return
                produced += len(ids)
                yield Chunk(text=text, token_ids=ids)
            finished_normally = True
            if rule.fail is not None:
                message = rule.fail.message or f"scripted failure after {rule.fail.after_chunks} chunks"
                if rule.fail.kind == "context_length_exceeded" and rule.fail.message is None:
                    message = (
                        f"This model's maximum context length is exceeded ({prompt_tokens} prompt tokens)."
                    )
                yield EngineFailed(failure=rule.fail.kind, message=message, prompt_tokens=prompt_tokens)
                return
            yield Finished(
                reason="stop" if matched is not None else rule.finish,
                prompt_tokens=prompt_tokens,
                cached_tokens=rule.cached_tokens,
                stop_sequence=matched,
            )
        finally:
            if not finished_normally:
                self.cancelled += 1

    async def aclose(self) -> None:
        return None


def _cut_to_tokens(text: str, budget: int) -> str:
    return "".join(tokens.pieces(text)[: max(0, budget)])


def stop_cut(chunks: list[str], stops: tuple[str, ...]) -> tuple[list[str], str | None]:
    """The chunks up to where the first stop string is completed, and that string."""
    text = "".join(chunks)
    hits = [(i + len(s), i, s) for s in stops if s and (i := text.find(s)) >= 0]
    if not hits:
        return chunks, None
    _, start, matched = min(hits)
    kept: list[str] = []
    size = 0
    for chunk in chunks:
        if size + len(chunk) >= start:
            if start > size:
                kept.append(chunk[: start - size])
            break
        kept.append(chunk)
        size += len(chunk)
    return kept, matched
