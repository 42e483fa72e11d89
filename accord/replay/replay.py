"""``accord replay DIR``: run recorded engine output through today's pipeline (SPEC R2).

Each trace's request is prepared again by a :class:`Service` built with the recorded options (parsers,
profile, keepalive, web-search policy), with an engine that plays the recorded engine events and the
recorded ids, so the rerun is the chain a live request runs today. The replayed stream and snapshot are
compared with the recording (see :mod:`accord.replay._compare` for what is allowed to differ) and both
streams are audited for invariant violations.

With ``--rechunk SEED`` the engine text is split anew at random (seeded per trace), which changes every
delta by design: then only the snapshot (less usage, whose token attribution follows the chunks) must
stay the same, and the replayed stream must still audit clean.

Exit status: 0 when nothing changed and nothing is violated, 1 when a response changed or an invariant
is violated, 2 when a trace cannot be read or replayed (or there is none).
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
import msgspec
import structlog

from accord.adapters.metrics import Metrics
from accord.adapters.requests import Conversation, ResponsesRequest
from accord.adapters.runner import Collected, Lifecycle, Runner, Stop
from accord.adapters.service import Service
from accord.adapters.templates import PromptRenderer, resolve_profile
from accord.errors import AccordError
from accord.events.generation import EngineFailed, Finished
from accord.events.trace import redact_lifecycle
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.tools import tool_parser
from accord.replay._compare import comparable_response, difference, stream_difference
from accord.replay._replay_engine import TraceEngine, rechunk, recorded_ids
from accord.replay._tracefile import Trace, TraceError, load_trace
from accord.replay.audit import audit_events
from accord.replay.progress import bar

#: Causes after which the recorded stream simply stops (nobody was left to send the rest to).
_CUT_SHORT = frozenset({"client_disconnected", "aborted"})
#: Audit findings that are the expected shape of a stream that was cut short.
_CUT_CODES = frozenset({"missing_terminal"})


_encode = msgspec.json.Encoder().encode


class ReplayResult(msgspec.Struct, kw_only=True):
    source: str
    response_id: str | None = None
    cause: str | None = None
    replayed_cause: str | None = None
    stream_change: str | None = None
    snapshot_change: str | None = None
    violations: list[str] = msgspec.field(default_factory=list)
    recorded_violations: list[str] = msgspec.field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.stream_change or self.snapshot_change or self.cause != self.replayed_cause)

    @property
    def violated(self) -> bool:
        return bool(self.violations or self.recorded_violations)


@dataclass
class _ReplayService(Service):
    """The live service, with the stored history and item references taken from the trace."""

    recorded_history: list[dict[str, Any]] = field(default_factory=list)
    recorded_references: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def history(self, request: ResponsesRequest) -> list[dict[str, Any]]:
        return self.recorded_history

    async def references(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        return {i: self.recorded_references[i] for i in ids if i in self.recorded_references}


def _service_for(options: dict[str, Any], cache: dict[str, _ReplayService]) -> _ReplayService:
    key = msgspec.json.encode(options).decode()
    service = cache.get(key)
    if service is None:
        profile = resolve_profile(options.get("profile"), None)
        reasoning_name = options.get("reasoning_parser") or profile.reasoning_parser
        tool_name = options.get("tool_parser") or profile.tool_parser
        service = _ReplayService(
            engine=TraceEngine("", [], raise_name=None, go_silent=False),
            renderer=PromptRenderer.plain(),
            profile=profile.with_overrides(reasoning_parser=reasoning_name, tool_parser=tool_name),
            reasoning=reasoning_parser(reasoning_name),
            tools=tool_parser(tool_name),
            sealer=None,
            keepalive_interval=float(options.get("keepalive_interval") or 10.0),
            web_search="drop" if options.get("web_search") == "drop" else "refuse",
            vision=bool(options.get("vision")),
        )
        cache[key] = service
    return service


def _engine_for(trace: Trace, rng: random.Random | None) -> TraceEngine:
    events = [event for _, event in trace.engine]
    if rng is not None:
        events = rechunk(events, rng)
    closed = bool(events) and isinstance(events[-1], (Finished, EngineFailed))
    raise_name = None
    if not closed and trace.cause == "failed:engine_error" and trace.final is not None:
        # The engine raised rather than reporting: the response names only the exception type (W6).
        error = trace.final.get("error")
        raise_name = str(error.get("message")) if isinstance(error, dict) else "EngineError"
    model = str(trace.options.get("model") or "")
    return TraceEngine(model, events, raise_name=raise_name, go_silent=not closed and raise_name is None)


async def replay_trace(
    trace: Trace, cache: dict[str, _ReplayService], rng: random.Random | None
) -> ReplayResult:
    """Run one trace again and judge the result."""
    result = ReplayResult(source=trace.path, response_id=trace.header.get("response_id"), cause=trace.cause)
    engine = _engine_for(trace, rng)
    engine.exhausted = anyio.Event()
    # The cached service, with this trace's engine, ids, history and references.
    service = dataclasses.replace(
        _service_for(trace.options, cache),
        engine=engine,
        new_id=recorded_ids(trace.wire),
        recorded_history=list(trace.header.get("history") or []),
        recorded_references=dict(trace.header.get("references") or {}),
    )
    try:
        request = msgspec.convert(trace.header.get("request"), ResponsesRequest)
        recorded = trace.header.get("conversation")
        if recorded is None:
            prepared = await service.prepare(request)
        else:  # a Chat Completions or Messages run: its conversation is the input
            prepared = service.prepare_protocol(
                msgspec.convert(recorded, Conversation),
                model=request.model,
                stream=bool(request.stream),
                protocol=str(trace.header.get("protocol")),
            )
    except (msgspec.ValidationError, AccordError) as exc:
        result.error = f"cannot prepare the recorded request: {exc}"
        return result

    async def cut_when_silent() -> Stop:
        # The recorded run stopped here (hang-up, shutdown): stop once the chain has caught up.
        assert engine.exhausted is not None
        await engine.exhausted.wait()
        await anyio.wait_all_tasks_blocked()
        if trace.cause == "failed:server_shutting_down":
            return Stop.SHUTDOWN
        return Stop.CLIENT_GONE if trace.cause == "client_disconnected" else Stop.ABORTED

    collected = Collected()
    metrics = Metrics(process=False)
    # The driver a live response runs under, with no hooks: a replay stores and traces nothing.
    runner = Runner((), metrics, Lifecycle(metrics))
    outcome = await runner.drive(prepared, collected, watchers=[cut_when_silent] if engine.go_silent else [])
    run, wire = prepared.run, collected.events
    result.replayed_cause = outcome.cause
    replayed = [msgspec.to_builtins(event) for event in wire]
    if trace.header.get("redacted"):
        replayed = [redact_lifecycle(e) for e in replayed]
    final = msgspec.to_builtins(run.log.snapshot.body()) if run.log.snapshot.response_id else None
    _judge(result, trace, replayed, final, rng)
    return result


def _judge(
    result: ReplayResult,
    trace: Trace,
    replayed: list[dict[str, Any]],
    final: dict[str, Any] | None,
    rng: random.Random | None,
) -> None:
    cut_short = trace.cause in _CUT_SHORT
    if rng is None:
        result.stream_change = stream_difference(trace.wire, replayed, prefix_only=cut_short)
    if trace.final is not None and not cut_short:
        if trace.header.get("redacted") and final is not None:
            final = redact_lifecycle({"response": final})["response"]
        usage = rng is None
        result.snapshot_change = difference(
            comparable_response(trace.final, usage=usage), comparable_response(final, usage=usage)
        )
    ignore = _CUT_CODES if cut_short else frozenset()
    result.violations = _violations(replayed, ignore)
    result.recorded_violations = _violations(trace.wire, ignore)


def _violations(events: list[dict[str, Any]], ignore: frozenset[str]) -> list[str]:
    if not events:
        return []
    verdict = audit_events(events)
    return [f"{d.code}: {d.detail}" for d in verdict.defects if d.code not in ignore]


def trace_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*.jsonl") if p.is_file() and not p.name.startswith("."))
    return [path]


def _render(result: ReplayResult, out: TextIO) -> None:
    if result.error is not None:
        out.write(f"{result.source}: unreadable -- {result.error}\n")
        return
    label = "unchanged" if not result.changed else "CHANGED"
    if result.violated:
        label += ", VIOLATION"
    out.write(f"{result.source}: {label} ({result.response_id}, {result.cause})\n")
    if result.cause != result.replayed_cause:
        out.write(f"  - ended {result.replayed_cause!r}, recorded {result.cause!r}\n")
    if result.stream_change:
        out.write(f"  - stream: {result.stream_change}\n")
    if result.snapshot_change:
        out.write(f"  - snapshot: {result.snapshot_change}\n")
    for v in result.violations:
        out.write(f"  - replayed stream violates {v}\n")
    for v in result.recorded_violations:
        out.write(f"  - recorded stream violates {v}\n")


async def replay_paths(paths: list[Path], rechunk_seed: int | None) -> list[ReplayResult]:
    cache: dict[str, _ReplayService] = {}
    results = []
    for path in bar(paths, "replay"):
        try:
            trace = load_trace(path)
        except TraceError as exc:
            results.append(ReplayResult(source=str(path), error=str(exc)))
            continue
        rng = None
        if rechunk_seed is not None:
            rng = random.Random(rechunk_seed ^ zlib.crc32(path.name.encode()))
        try:
            # A replayed failure logs as the original did; the verdict below is what a replay reports.
            with structlog.testing.capture_logs():
                results.append(await replay_trace(trace, cache, rng))
        except (KeyError, ValueError) as exc:
            results.append(ReplayResult(source=str(path), error=f"cannot replay: {exc}"))
    return results


def replay_dir(path: Path, out: TextIO, *, rechunk_seed: int | None = None, as_json: bool = False) -> int:
    """Replay every trace under ``path`` (or the one trace ``path``); print a line per trace (or one
    JSON document); return the exit status."""
    if not path.exists():
        if as_json:
            out.write(
                _encode({"exit_status": 2, "error": "no such file or directory", "results": []}).decode()
            )
            out.write("\n")
        else:
            out.write(f"{path}: no such file or directory\n")
        return 2
    paths = trace_files(path)
    results = anyio.run(replay_paths, paths, rechunk_seed)
    unreadable = sum(r.error is not None for r in results)
    changed = sum(r.error is None and r.changed for r in results)
    violated = sum(r.error is None and r.violated for r in results)
    status = 2 if unreadable or not results else (1 if changed or violated else 0)
    if as_json:
        summary = {
            "traces": len(results),
            "unchanged": len(results) - unreadable - changed,
            "changed": changed,
            "violated": violated,
            "unreadable": unreadable,
            "rechunk_seed": rechunk_seed,
        }
        doc = {"exit_status": status, "summary": summary, "results": results}
        out.write(_encode(doc).decode() + "\n")
        return status
    for result in results:
        _render(result, out)
    mode = f", rechunked with seed {rechunk_seed}" if rechunk_seed is not None else ""
    out.write(
        f"replay: {len(results)} traces{mode}: {len(results) - unreadable - changed} unchanged, "
        f"{changed} changed, {violated} with invariant violations, {unreadable} unreadable\n"
    )
    return status


__all__ = ["ReplayResult", "replay_dir", "replay_paths", "replay_trace", "trace_files"]
