"""What an engine emits for one generation request (SPEC E1).

An engine yields any number of :class:`Chunk` events and then exactly one of
:class:`Finished` or :class:`EngineFailed`. Nothing follows that last event.
"""

from __future__ import annotations

from typing import Literal

import msgspec

FinishReason = Literal["stop", "length"]
FailureKind = Literal["engine_error", "context_length_exceeded", "upstream_error", "internal_error"]


class GenerationEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the closed union of engine outputs."""


class Chunk(GenerationEvent, frozen=True, tag="chunk"):
    """Decoded text and the token ids it came from (empty when the engine does not report them)."""

    text: str
    token_ids: tuple[int, ...] = ()


class Finished(GenerationEvent, frozen=True, tag="finished"):
    """Generation ended normally; token counts as the engine measured them."""

    reason: FinishReason
    prompt_tokens: int
    cached_tokens: int = 0
    #: Generated tokens; ``None`` when the engine does not know (then chunks' token ids are counted).
    output_tokens: int | None = None
    #: The request's stop string that ended the text, when one did (Messages' ``stop_sequence``).
    stop_sequence: str | None = None


class EngineFailed(GenerationEvent, frozen=True, tag="failed"):
    """Generation could not start or could not go on.

    ``message`` is shown to clients only for ``engine_error`` and ``context_length_exceeded``.
    """

    failure: FailureKind
    message: str
    prompt_tokens: int = 0


GenerationOutput = Chunk | Finished | EngineFailed
