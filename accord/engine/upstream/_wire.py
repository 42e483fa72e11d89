"""The OpenAI-compatible completions wire as upstream engines speak it, read sans-IO.

vLLM, SGLang, TensorRT-LLM and llama.cpp all answer ``POST /v1/completions`` with the
same skeleton and differ in the extras: vLLM reports ``token_ids`` per chunk when asked
(``return_token_ids``), usage with ``prompt_tokens_details.cached_tokens``, and in a
prefill/decode split a top-level ``kv_transfer_params``; llama.cpp reports its cache
hits under ``timings.cache_n``. Errors come as ``{"error": {...}}`` (current vLLM,
OpenAI, accord) or flat ``{"object": "error", ...}`` (older vLLM), with ``code`` an
HTTP status number or a string.

:class:`StreamReader` turns the SSE payloads of one streamed completion into engine
events. It holds back ``Finished`` until the stream ends, because usage arrives in a
chunk of its own after the one that carries ``finish_reason``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from accord.events.generation import Chunk, EngineFailed, FailureKind, Finished, GenerationOutput


class SSEDecoder:
    """Bytes of an SSE body in, ``data`` payloads out (comments and other fields ignored)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk if self._buffer else chunk
        out: list[bytes] = []
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    out.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
        self._buffer = buffer[start:]
        return out

    def finish(self) -> list[bytes]:
        """A last event the body ended without its blank line."""
        if self._buffer.startswith(b"data:"):
            value = self._buffer[5:].rstrip(b"\r")
            self._data.append(value[1:] if value.startswith(b" ") else value)
        self._buffer = b""
        out = [b"\n".join(self._data)] if self._data else []
        self._data = []
        return out


class PromptTokensDetails(msgspec.Struct, kw_only=True):
    cached_tokens: int | None = None


class UsageInfo(msgspec.Struct, kw_only=True):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptTokensDetails | None = None


class Timings(msgspec.Struct, kw_only=True):
    #: llama.cpp: prompt tokens found in its cache.
    cache_n: int | None = None


class Choice(msgspec.Struct, kw_only=True):
    text: str | None = ""
    finish_reason: str | None = None
    token_ids: list[int] | None = None
    #: What stopped it, where the upstream says: vLLM's ``stop_reason`` and SGLang's ``matched_stop``
    #: hold the matched stop string (or a stop token's id). llama.cpp's OpenAI routes say nothing.
    stop_reason: str | int | None = None
    matched_stop: str | int | None = None


class ErrorInfo(msgspec.Struct, kw_only=True):
    message: str = ""
    type: str | None = None
    code: int | str | None = None


class CompletionBody(msgspec.Struct, kw_only=True):
    """One streamed chunk, or a whole non-streamed response, or an error envelope."""

    choices: list[Choice] | None = None
    usage: UsageInfo | None = None
    timings: Timings | None = None
    error: ErrorInfo | str | None = None
    object: str | None = None
    message: str | None = None
    type: str | None = None
    code: int | str | None = None
    kv_transfer_params: dict[str, Any] | None = None

    def error_info(self) -> ErrorInfo | None:
        if isinstance(self.error, ErrorInfo):
            return self.error
        if isinstance(self.error, str):
            return ErrorInfo(message=self.error)
        if self.object == "error":
            return ErrorInfo(message=self.message or "", type=self.type, code=self.code)
        return None

    def cached_tokens(self) -> int | None:
        details = self.usage.prompt_tokens_details if self.usage is not None else None
        if details is not None and details.cached_tokens is not None:
            return details.cached_tokens
        return self.timings.cache_n if self.timings is not None else None


_decoder = msgspec.json.Decoder(CompletionBody)


def decode_body(raw: bytes) -> CompletionBody | None:
    try:
        return _decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


# How each engine words an over-length prompt (vLLM old and new, SGLang, llama.cpp, TRT-LLM,
# OpenAI/accord codes). Checked only on 4xx answers, so a loose match cannot turn an
# outage into a context error.
_OVER_LENGTH = re.compile(
    r"context length|context_length|maximum model length|max_model_len|context size|context window"
    r"|max_seq_len|exceed_context",
    re.IGNORECASE,
)


def failure_of(status: int, raw: bytes) -> EngineFailed:
    """An upstream's non-200 answer as a typed failure (SPEC W6, W7)."""
    body = decode_body(raw)
    info = body.error_info() if body is not None else None
    message = info.message if info is not None and info.message else raw.decode("utf-8", "replace")[:500]
    if 400 <= status < 500 and status not in (408, 429):
        if _is_over_length(info, message):
            return EngineFailed(failure="context_length_exceeded", message=message)
        return EngineFailed(
            failure="engine_error", message=message or f"upstream rejected the request ({status})"
        )
    return EngineFailed(failure="upstream_error", message=f"upstream answered HTTP {status}")


def failure_in_stream(info: ErrorInfo) -> EngineFailed:
    """An error event inside a 200 stream (vLLM sends ``data: {"error": ...}`` then ``[DONE]``).

    Past the start of a stream a failure is nearly always the server's (an engine that
    died, a request it aborted); only an explicit client-error code keeps its message.
    """
    if _is_over_length(info, info.message):
        return EngineFailed(failure="context_length_exceeded", message=info.message)
    code, kind = info.code, (info.type or "").lower()
    if (isinstance(code, int) and 400 <= code < 500) or kind in ("badrequesterror", "invalid_request_error"):
        return EngineFailed(failure="engine_error", message=info.message or "upstream rejected the request")
    return EngineFailed(failure="upstream_error", message="upstream failed during generation")


def _is_over_length(info: ErrorInfo | None, message: str) -> bool:
    if info is not None and (
        info.code == "context_length_exceeded" or info.type == "exceed_context_size_error"
    ):
        return True
    return bool(_OVER_LENGTH.search(message))


def _reason(finish: str) -> tuple[str, FailureKind | None]:
    if finish == "length":
        return "length", None
    if finish == "abort":
        return "stop", "upstream_error"
    return "stop", None


class StreamReader:
    """Sans-IO: SSE payloads of one streamed completion -> ``Chunk``s, then one last event.

    ``prompt_tokens``/``cached_tokens`` given here are used where the upstream reports
    none (or, for the decode phase of a split, where its own numbers are not the ones
    the client is owed); ``count`` measures text when the upstream reports no tokens.
    """

    def __init__(
        self,
        *,
        count: Callable[[str], int],
        prompt_tokens: int | None = None,
        cached_tokens: int | None = None,
        trust_cached: bool = True,
        stops: tuple[str, ...] = (),
        stop_tokens: Mapping[int, str] | None = None,
    ) -> None:
        self._count = count
        #: The request's own stop strings: an upstream's matched stop is reported only if it is one.
        self._stops = stops
        #: Stops sent as token ids: an upstream names the id it stopped at (vLLM's ``stop_reason``).
        self._stop_tokens = stop_tokens or {}
        self._matched: str | None = None
        self._prompt_tokens = prompt_tokens
        self._cached_tokens = cached_tokens
        self._trust_cached = trust_cached
        self._pending_ids: list[int] = []
        self._ids_seen = 0
        self._ids_reported = True
        self._text_parts: list[str] = []
        self._finish: str | None = None
        self._usage: CompletionBody | None = None
        self.done = False
        #: True once anything generated has been read (no retry after this point).
        self.started = False

    def feed(self, payload: bytes) -> list[GenerationOutput]:
        if self.done:
            return []
        if payload.strip() == b"[DONE]":
            return self._end(saw_done=True)
        body = decode_body(payload)
        if body is None:
            return []
        info = body.error_info()
        if info is not None:
            self.done = True
            return [self.fail(failure_in_stream(info))]
        if body.usage is not None or body.timings is not None:
            self._usage = body
        out: list[GenerationOutput] = []
        for choice in body.choices or ():
            self.started = True
            text = choice.text or ""
            if choice.token_ids is None:
                self._ids_reported = self._ids_reported and not text
            else:
                self._pending_ids.extend(choice.token_ids)
                self._ids_seen += len(choice.token_ids)
            if text:
                self._text_parts.append(text)
                out.append(Chunk(text=text, token_ids=tuple(self._pending_ids)))
                self._pending_ids = []
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
            for matched in (choice.stop_reason, choice.matched_stop):
                if isinstance(matched, str) and matched in self._stops:
                    self._matched = matched
                elif isinstance(matched, int) and matched in self._stop_tokens:
                    self._matched = self._stop_tokens[matched]
        return out

    def finish(self) -> list[GenerationOutput]:
        """The body ended (EOF)."""
        return [] if self.done else self._end(saw_done=False)

    def _end(self, *, saw_done: bool) -> list[GenerationOutput]:
        self.done = True
        if self._finish is None and not saw_done:
            return [
                self.fail(
                    EngineFailed(failure="upstream_error", message="upstream stream ended before it finished")
                )
            ]
        reason, failure = _reason(self._finish or "stop")
        if failure is not None:
            return [self.fail(EngineFailed(failure=failure, message="the upstream aborted the request"))]
        out: list[GenerationOutput] = []
        if self._pending_ids:
            out.append(Chunk(text="", token_ids=tuple(self._pending_ids)))
        usage = self._usage
        prompt = usage.usage.prompt_tokens if usage is not None and usage.usage is not None else None
        completion = usage.usage.completion_tokens if usage is not None and usage.usage is not None else None
        cached = usage.cached_tokens() if usage is not None and self._trust_cached else None
        if completion is None:
            completion = self._ids_seen if self._ids_reported else self._count("".join(self._text_parts))
        out.append(
            Finished(
                reason="length" if reason == "length" else "stop",
                prompt_tokens=(self._prompt_tokens if prompt is None else prompt) or 0,
                cached_tokens=(self._cached_tokens if cached is None else cached) or 0,
                output_tokens=completion,
                stop_sequence=self._matched if reason == "stop" else None,
            )
        )
        return out

    def fail(self, failure: EngineFailed) -> EngineFailed:
        """``failure`` with the prompt size this reader knows; the reader is done."""
        self.done = True
        return msgspec.structs.replace(failure, prompt_tokens=self._prompt_tokens or 0)
