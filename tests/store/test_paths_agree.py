"""One engine output, every way a response reaches a client: the same events and the same fold.

The run driver is shared by the streamed, stored, replayed and background paths, so for any engine
output (any text, any chunking, either finish) the streamed events, the stream replayed from the
store, the rerun of the recorded trace and the background run's events must all agree, and every
fold must be the ``response.completed`` body. A path that re-implemented part of the lifecycle
(its own numbering, its own keepalives, its own terminal) would show here as a difference.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.adapters.build import assemble
from accord.adapters.http.exchange import Exchange, Message
from accord.adapters.requests import decode_request
from accord.adapters.runner import Collected
from accord.adapters.service import Prepared, Service
from accord.adapters.store import replay
from accord.engine.scripted import Rule, Script, ScriptedEngine
from accord.events.response import fold
from accord.replay._tracefile import load_trace
from accord.replay.replay import replay_trace
from tests.serving import scripted_settings, write_script
from tests.store.records import LIMITS

PIECES = ["Hello", " world", "<think>", "</think>", "é", "\n", "a<b", " ", "42", "</thi"]

#: Fields that name the moment or the request mode rather than what was generated.
_CLOCK_AND_MODE = frozenset({"created_at", "completed_at", "background"})


@st.composite
def outputs(draw: st.DrawFn) -> tuple[list[str], str]:
    text = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6))))
    bounds = [0, *[c for c in cuts if 0 < c < len(text)], len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    return chunks, draw(st.sampled_from(["stop", "length"]))


def _counting_ids() -> Any:
    counter = itertools.count()
    return lambda prefix: f"{prefix}_{next(counter):04d}"


def _plain(value: Any) -> Any:
    """JSON values with the clock and the request mode left out, for comparing two runs."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in _CLOCK_AND_MODE}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _wire(events: list[Any]) -> list[Any]:
    return [msgspec.to_builtins(e) for e in events]


async def _prepare(service: Service, body: dict[str, Any]) -> Prepared:
    request = decode_request(msgspec.json.encode({"model": "m", "input": "hi", **body}), LIMITS)
    return await service.prepare(request)


async def _background(built: Any, service: Service) -> list[Any]:
    """Start a background response as the POST does, wait for it, return what it published."""
    sent: list[Message] = []

    async def receive() -> Message:
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: Message) -> None:
        sent.append(message)

    runs = built.app.context.background
    assert runs is not None
    ex = Exchange({"type": "http", "method": "POST", "path": "/v1/responses"}, receive, send)
    async with runs.lifetime():
        prepared = await _prepare(service, {"background": True})
        await runs.start(ex, prepared)
        live = runs.live[prepared.run.opened.response_id]
        await live.done.wait()
    assert sent[0]["status"] == 200
    assert msgspec.json.decode(sent[1]["body"])["status"] == "queued"
    record = await runs.store.get(prepared.run.opened.response_id)
    assert record is not None and record.final
    assert record.snapshot().body() == prepared.run.log.snapshot.body()
    return live.events


async def _all_paths(tmp: Path, chunks: list[str], finish: str) -> None:
    settings_ = scripted_settings(
        write_script(tmp, [{"output": "unused"}]),
        reasoning_parser="qwen3",
        trace_dir=tmp / "traces",
        store=f"sqlite:///{tmp / 'paths.db'}",
    )
    engine = ScriptedEngine(Script(rules=[Rule(output="".join(chunks), chunks=chunks, finish=finish)]))
    built = assemble(settings_, engine=engine)
    assert built.store is not None and built.recorder is not None
    live_service = _with_ids(built.service)

    # Streamed (and, through the hooks, stored and traced).
    async with built.recorder.running():
        prepared = await _prepare(live_service, {"stream": True})
        collected = Collected()
        outcome = await built.runner.drive(prepared, collected)
    streamed = _wire(collected.events)
    body = msgspec.to_builtins(outcome.snapshot.body())
    assert streamed[-1]["type"] in ("response.completed", "response.incomplete")
    assert streamed[-1]["response"] == body
    assert [e["sequence_number"] for e in streamed] == list(range(len(streamed)))

    # Stored: the log read back, projected and numbered again.
    response_id = prepared.run.opened.response_id
    record = await built.store.get(response_id)
    assert record is not None
    assert _wire(replay(record.decoded_events(), record.keepalive_seqs)) == streamed
    assert msgspec.to_builtins(fold(record.decoded_events()).body()) == body

    # Replayed: the recorded trace run again through today's chain.
    trace = load_trace(tmp / "traces" / f"{response_id}.jsonl")
    result = await replay_trace(trace, {}, None)
    assert result.error is None and not result.changed, result
    assert not result.violated, result

    # Background: the same engine output, driven outside any exchange.
    background = _wire(await _background(built, _with_ids(built.service)))
    assert _plain(background) == _plain(streamed)
    await built.store.aclose()


def _with_ids(service: Service) -> Service:
    import dataclasses

    return dataclasses.replace(service, new_id=_counting_ids())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=outputs())
def test_streamed_stored_replayed_and_background_paths_agree(
    tmp_path_factory: pytest.TempPathFactory, backend: str, output: tuple[list[str], str]
) -> None:
    """Every consumer of a run sees the same events and the same fold for one engine output."""
    chunks, finish = output
    tmp = tmp_path_factory.mktemp("paths")
    anyio.run(_all_paths, tmp, chunks, finish, backend=backend)
