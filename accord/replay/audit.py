"""``accord audit FILE-or-DIR``: check captured Responses streams from any server (SPEC R3), and
Chat Completions and Messages captures against their own grammars (``protocol_check.py``).

Inputs are recognised by their content, not their names: raw event-stream text as ``curl -N`` (or
``curl -i -N``) or ``accord record`` saves it, accord trace files (JSON lines), JSON-lines or JSON-array
dumps of events, and non-streamed Response bodies. Each input gets a verdict; a directory also gets a
census. Exit status: 0 when every input read is sound, 1 when any defect is found, 2 when an input could
not be read (or a directory held nothing auditable) -- an unreadable input outranks defects, because a
green census over inputs that were never read would be a lie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import msgspec

from accord.replay._check import StreamChecker
from accord.replay._items import reasoning_chars
from accord.replay.census import render_census, take_census
from accord.replay.progress import bar
from accord.replay.protocol_check import ChatChecker, MessagesChecker, protocol_of
from accord.replay.sse import SseCapture, parse_sse
from accord.replay.verdict import Defect, Verdict, finish_verdict

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode

#: Makes the checker an input is fed to (the HTML report's records the events it sees too).
Checker = Callable[[], StreamChecker]

#: Files ``accord record`` writes next to each captured body; they are not streams.
SIDECAR_SUFFIXES = (".meta.json", ".request.body")


def audit_checker(checker: StreamChecker, source: str, fmt: str) -> Verdict:
    """Finish a fed checker and turn it into a verdict with its census units."""
    defects = checker.finish()
    items = list(checker.items.values())
    units: dict[Any, int] = {"streams": 1, "responses": int(checker.terminal_response is not None)}
    units["items"] = len(items)
    for unit, types in (
        ("message items", ("message",)),
        ("reasoning items", ("reasoning",)),
        ("function calls", ("function_call",)),
        ("custom tool calls", ("custom_tool_call",)),
        ("tool calls", ("function_call", "custom_tool_call")),
    ):
        units[unit] = sum(item.type in types for item in items)
    verdict = Verdict(
        source=source,
        status="sound",
        format=fmt,
        response_id=checker.response_id,
        terminal=checker.terminal,
        events=checker.events,
        defects=defects,
        units=units,
        reasoning_chars=sum(reasoning_chars(item, checker.finals.get(item.index)) for item in items),
        notes=checker.notes,
    )
    return finish_verdict(verdict)


def audit_events(
    events: Iterable[object],
    source: str = "<events>",
    fmt: str = "events",
    *,
    checker_type: Checker = StreamChecker,
) -> Verdict:
    """Audit already decoded event objects (traces, replays, tests)."""
    checker = checker_type()
    for event in events:
        checker.feed_object(event)
    if checker.events == 0:
        return Verdict(source=source, status="unreadable", format=fmt, reason="no events")
    return audit_checker(checker, source, fmt)


def audit_protocol_capture(capture: SseCapture, source: str, protocol: str) -> Verdict:
    """A Chat Completions or Messages capture, checked against that protocol's grammar."""
    checker: ChatChecker | MessagesChecker = ChatChecker() if protocol == "chat" else MessagesChecker()
    for frame in capture.frames:
        checker.feed(frame.data)
    defects = checker.finish()
    if capture.partial is not None:
        defects.append(Defect(code="unterminated_frame", detail="the body ended inside a frame"))
    calls = checker.calls if isinstance(checker, ChatChecker) else checker.blocks
    verdict = Verdict(
        source=source,
        status="sound",
        format=f"sse-{protocol}",
        response_id=checker.response_id,
        terminal=checker.terminal,
        events=checker.events,
        defects=defects,
        units={"streams": 1, "items": calls},
    )
    if capture.http_status is not None and capture.http_status != 200:
        verdict.notes.append(f"HTTP status {capture.http_status}")
    return finish_verdict(verdict)


def audit_capture(capture: SseCapture, source: str, *, checker_type: Checker = StreamChecker) -> Verdict:
    if capture.frames:
        protocol = protocol_of(capture.frames[0].event, capture.frames[0].data)
        if protocol != "responses":
            return audit_protocol_capture(capture, source, protocol)
    checker = checker_type()
    for frame in capture.frames:
        checker.feed(frame.data)
    if capture.partial is not None:
        what = capture.partial.event or _peek_type(capture.partial.data) or "an event"
        checker.defects.append(
            Defect(
                code="unterminated_frame",
                detail=f"the body ended inside a frame ({what}) with no blank line after it; clients drop it",
            )
        )
    verdict = audit_checker(checker, source, "sse")
    if capture.http_status is not None and capture.http_status != 200:
        verdict.notes.append(f"HTTP status {capture.http_status}")
    if capture.comments:
        verdict.notes.append(
            f"{capture.comments} SSE comment lines (not data events; they reset no client timer)"
        )
    return verdict


def _peek_type(data: str) -> str | None:
    try:
        obj = _decode(data)
    except msgspec.DecodeError:
        return None
    kind = obj.get("type") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) else None


def audit_response(obj: dict[str, Any], source: str) -> Verdict:
    """A non-streamed Response body: what can be checked without a stream (SPEC W2, W12)."""
    defects: list[Defect] = []
    status = obj.get("status")
    if status in ("completed", "incomplete") and not isinstance(obj.get("usage"), dict):
        defects.append(Defect(code="usage_missing", detail=f"status {status!r} without usage"))
    output = obj.get("output")
    if not isinstance(output, list):
        defects.append(Defect(code="final_output_missing", detail="no output list"))
        output = []
    seen: set[tuple[str, str]] = set()
    for f in output:
        if not isinstance(f, dict):
            continue
        for field in ("id", "call_id"):
            value = f.get(field)
            if isinstance(value, str):
                if (field, value) in seen:
                    defects.append(Defect(code="conflicting_identities", detail=f"{field} {value!r} repeats"))
                seen.add((field, value))
    verdict = Verdict(
        source=source,
        status="sound",
        format="response",
        response_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
        defects=defects,
        units={"responses": 1},
    )
    return finish_verdict(verdict)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def audit_protocol_body(obj: dict[str, Any], source: str) -> Verdict:
    """A non-streamed ``chat.completion`` or ``message`` body: its usage and its calls' ids."""
    defects: list[Defect] = []
    chat = obj.get("object") == "chat.completion"
    if not isinstance(obj.get("usage"), dict):
        defects.append(Defect(code="usage_missing", detail="a finished body without usage"))
    if chat:
        choices = _list(obj.get("choices"))
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        calls = _list(message.get("tool_calls")) if isinstance(message, dict) else []
        ids = [c.get("id") for c in calls if isinstance(c, dict)]
    else:
        blocks = _list(obj.get("content"))
        ids = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    if len(set(ids)) != len(ids):
        defects.append(Defect(code="conflicting_identities", detail="two tool calls share an id"))
    verdict = Verdict(
        source=source,
        status="sound",
        format="chat.completion" if chat else "message",
        response_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
        defects=defects,
        units={"responses": 1},
    )
    return finish_verdict(verdict)


def audit_text(text: str, source: str = "<text>", *, checker_type: Checker = StreamChecker) -> Verdict:
    """Audit one input's text, whatever it holds; never raises."""
    body = text.lstrip("\ufeff \t\r\n")
    if not body:
        return Verdict(source=source, status="unreadable", reason="empty input")
    if body[0] in "{[":
        verdict = _audit_json(body, source, checker_type)
        if verdict is not None:
            return verdict
    capture = parse_sse(text)
    if capture.frames or capture.partial is not None:
        return audit_capture(capture, source, checker_type=checker_type)
    reason = "no server-sent events found"
    if capture.http_status is not None:
        reason += f" (HTTP status {capture.http_status})"
    return Verdict(source=source, status="unreadable", reason=reason)


def _audit_json(body: str, source: str, checker_type: Checker) -> Verdict | None:
    """JSON inputs: a trace, a dump of events, a Response body or an error body; ``None`` if none of those."""
    first_line = body.split("\n", 1)[0]
    try:
        head = _decode(first_line)
    except msgspec.DecodeError:
        head = None
    if isinstance(head, dict) and head.get("kind") == "trace":
        return audit_trace(body, source, checker_type=checker_type)
    if isinstance(head, dict) and isinstance(head.get("type"), str) and "\n" in body.strip():
        # JSON lines of events, one per line.
        lines = [line for line in body.splitlines() if line.strip()]
        try:
            events = [_decode(line) for line in lines]
        except msgspec.DecodeError as exc:
            return Verdict(source=source, status="unreadable", reason=f"JSON lines that do not parse: {exc}")
        return audit_events(events, source, "jsonl", checker_type=checker_type)
    try:
        whole = _decode(body)
    except msgspec.DecodeError:
        return None
    if isinstance(whole, list):
        return audit_events(whole, source, "json-events", checker_type=checker_type)
    if isinstance(whole, dict):
        if whole.get("object") == "response":
            return audit_response(whole, source)
        if whole.get("object") == "chat.completion" or whole.get("type") == "message":
            return audit_protocol_body(whole, source)
        if "error" in whole and "type" not in whole:
            return Verdict(source=source, status="skipped", reason="an HTTP error body, not a stream")
        if isinstance(whole.get("type"), str):
            return audit_events([whole], source, "json-events", checker_type=checker_type)
    return None


def audit_trace(body: str, source: str, *, checker_type: Checker = StreamChecker) -> Verdict:
    """An accord trace: audit the wire events it recorded, in the order they were sent."""
    events: list[object] = []
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = _decode(line)
        except msgspec.DecodeError as exc:
            return Verdict(source=source, status="unreadable", format="trace", reason=f"line {number}: {exc}")
        if isinstance(record, dict) and record.get("kind") == "wire":
            events.append(record.get("event"))
    verdict = audit_events(events, source, "trace", checker_type=checker_type)
    if verdict.status == "unreadable":
        verdict.reason = "a trace without wire events"
    return verdict


def audit_file(path: Path, source: str | None = None, *, checker_type: Checker = StreamChecker) -> Verdict:
    name = source or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Verdict(source=name, status="unreadable", reason=f"cannot read: {exc.strerror or exc}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        verdict = audit_text(data.decode("utf-8", errors="replace"), name, checker_type=checker_type)
        verdict.notes.append(f"not valid UTF-8 at byte {exc.start}; read with replacement characters")
        return verdict
    return audit_text(text, name, checker_type=checker_type)


def iter_inputs(directory: Path) -> list[Path]:
    """Every regular, non-hidden file under ``directory`` except recording sidecars, sorted."""
    found = []
    for path in directory.rglob("*"):
        rel = path.relative_to(directory)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.name.endswith(SIDECAR_SUFFIXES):
            continue
        found.append(path)
    return sorted(found)


def audit_dir(directory: Path) -> list[Verdict]:
    verdicts = []
    for path in bar(iter_inputs(directory), "audit"):
        verdict = audit_file(path, str(path.relative_to(directory)))
        if verdict.status == "unreadable" and verdict.reason == "no server-sent events found":
            # In a directory, a file that is no stream at all (a README, a log) is not a failed read.
            verdict.status = "skipped"
        verdicts.append(verdict)
    return verdicts


def exit_status(verdicts: list[Verdict]) -> int:
    if any(v.status == "unreadable" for v in verdicts):
        return 2
    if not any(v.status in ("sound", "defective") for v in verdicts):
        return 2
    return 1 if any(v.status == "defective" for v in verdicts) else 0


def render_verdict(verdict: Verdict, out: TextIO) -> None:
    if verdict.status in ("unreadable", "skipped"):
        out.write(f"{verdict.source}: {verdict.status} -- {verdict.reason}\n")
        return
    what = f"{verdict.terminal or 'no terminal'}, {verdict.response_id or 'no id'}, {verdict.events} events"
    if verdict.format == "response":
        what = f"non-streamed response {verdict.response_id or 'without id'}"
    label = "sound" if verdict.status == "sound" else "DEFECTIVE"
    sdk = "; the openai SDK streaming helper raises on it" if verdict.breaks_sdk else ""
    out.write(f"{verdict.source}: {label} ({what}){sdk}\n")
    for d in verdict.defects:
        where = f" [output_index {d.output_index}]" if d.output_index is not None else ""
        out.write(f"  - {d.code}{where}: {d.detail}\n")
    for note in verdict.notes:
        out.write(f"  note: {note}\n")


def audit_path(path: Path, out: TextIO, *, as_json: bool = False) -> int:
    """Audit a file or a directory of captures, print verdicts (and a census), return the exit status."""
    if path.is_dir():
        verdicts = audit_dir(path)
        if not verdicts:
            verdicts = [Verdict(source=str(path), status="unreadable", reason="an empty directory")]
    elif path.exists():
        verdicts = [audit_file(path)]
    else:
        verdicts = [Verdict(source=str(path), status="unreadable", reason="no such file or directory")]
    census = take_census(verdicts)
    status = exit_status(verdicts)
    if as_json:
        out.write(_encode({"exit_status": status, "verdicts": verdicts, "census": census}).decode())
        out.write("\n")
        return status
    for verdict in verdicts:
        render_verdict(verdict, out)
    if path.is_dir():
        render_census(census, out)
    return status
