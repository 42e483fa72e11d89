"""What a replay plugs into the service: an engine that plays recorded events, and the recorded ids.

The engine plays a trace's engine events in order and then ends the way the recorded run ended: with
the recorded final event, by raising (an engine that raised instead of reporting a failure), or by going
silent (the client left, the server shut down) so the replay can cut the run at the same point.

Ids are handed out per prefix in the order the recorded stream first showed them, so a replayed
response names its items exactly as the recording did and the streams compare byte for byte.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from collections.abc import AsyncGenerator, Callable
from typing import Any

import anyio

from accord.engine.protocol import EngineCapabilities, GenerationRequest
from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput


class TraceEngine:
    """Plays recorded engine events (SPEC E1 protocol)."""

    def __init__(
        self, model_name: str, events: list[GenerationOutput], *, raise_name: str | None, go_silent: bool
    ) -> None:
        self._model_name = model_name
        self.events = events
        self.raise_name = raise_name
        self.go_silent = go_silent
        #: Set once every recorded event was handed out (the replay waits on it to cut a silent run).
        self.exhausted: anyio.Event | None = None

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()  # it plays what it was given: nothing to constrain or tokenise

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[GenerationOutput, None]:
        # No pause between events: how the egress batches them changes no byte of the stream.
        for event in self.events:
            yield event
        if self.raise_name is not None:
            raise type(self.raise_name, (Exception,), {})()
        if self.go_silent:
            if self.exhausted is not None:
                self.exhausted.set()
            await anyio.sleep_forever()

    async def count_tokens(self, prompt: str) -> int:
        return 0

    async def aclose(self) -> None:
        return None


def recorded_ids(wire: list[dict[str, Any]]) -> Callable[[str], str]:
    """A ``new_id`` that repeats the ids of a recorded stream, per prefix, in order of appearance."""
    queues: dict[str, deque[str]] = defaultdict(deque)
    seen: set[str] = set()

    def remember(value: object) -> None:
        if isinstance(value, str) and "_" in value and value not in seen:
            seen.add(value)
            queues[value.split("_", 1)[0]].append(value)

    for event in wire:
        response = event.get("response")
        if isinstance(response, dict):
            remember(response.get("id"))
        item = event.get("item")
        if event.get("type") == "response.output_item.added" and isinstance(item, dict):
            remember(item.get("id"))
            remember(item.get("call_id"))
    fresh = 0

    def new_id(prefix: str) -> str:
        nonlocal fresh
        queue = queues.get(prefix)
        if queue:
            return queue.popleft()
        # The recording ran out of ids: the replay made more items than the original did.
        fresh += 1
        return f"{prefix}_replay{fresh:06d}"

    return new_id


def rechunk(events: list[GenerationOutput], rng: random.Random) -> list[GenerationOutput]:
    """The same output split differently: chunk text joined and cut at random places.

    Each chunk's token ids travel with the piece that holds that chunk's last character, so ids stay
    next to their text. The closing event is kept as it was.
    """
    chunks = [e for e in events if isinstance(e, Chunk)]
    rest = [e for e in events if not isinstance(e, Chunk)]
    text = "".join(c.text for c in chunks)
    if not text:
        return events
    ids_at: dict[int, list[int]] = defaultdict(list)
    end = 0
    for c in chunks:
        end += len(c.text)
        ids_at[max(end - 1, 0)].extend(c.token_ids)
    average = max(1, len(text) // max(1, len(chunks)))
    pieces: list[GenerationOutput] = []
    start = 0
    while start < len(text):
        size = rng.randint(1, max(1, 2 * average))
        stop = min(len(text), start + size)
        token_ids = [t for i in range(start, stop) for t in ids_at.get(i, ())]
        pieces.append(Chunk(text=text[start:stop], token_ids=tuple(token_ids)))
        start = stop
    closing = [e for e in rest if isinstance(e, (Finished, EngineFailed))]
    return pieces + closing
