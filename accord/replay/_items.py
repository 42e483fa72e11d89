"""Per-item state of an audited stream, and the comparison of an item's text across its views.

Every text an item carries (output text, refusal, reasoning content, reasoning summary, function
arguments, custom tool input) can be read from up to five places: the concatenated deltas, the ``*.done``
event, ``content_part.done``, ``output_item.done`` and the final response. A client may read any one of
them, so they must all agree; when they do not, the comparison says which views disagree and how.
"""

from __future__ import annotations

from typing import Any

from accord.replay.verdict import Defect

#: A text slot within an item: (kind, index). Calls have one slot with index ``None``.
PartKey = tuple[str, int | None]

#: Which item type each text kind belongs to.
KIND_ITEM_TYPE = {
    "text": "message",
    "refusal": "message",
    "reasoning": "reasoning",
    "summary": "reasoning",
    "arguments": "function_call",
    "input": "custom_tool_call",
}

_MISMATCH_CODE = {
    "text": "text_mismatch",
    "refusal": "refusal_mismatch",
    "reasoning": "reasoning_mismatch",
    "summary": "reasoning_mismatch",
    "arguments": "arguments_mismatch",
    "input": "input_mismatch",
}

CALL_TYPES = frozenset({"function_call", "custom_tool_call", "shell_call", "shell_call_output"})


class Part:
    """What the stream said about one text slot."""

    __slots__ = ("added", "closed", "done_text", "has_deltas", "part_done_text", "pieces")

    def __init__(self) -> None:
        self.added = False
        self.closed = False
        self.has_deltas = False
        self.pieces: list[str] = []
        self.done_text: str | None = None
        self.part_done_text: str | None = None


class Item:
    """One streamed output item, from ``output_item.added`` to ``output_item.done``."""

    __slots__ = ("added", "done", "id", "index", "order", "parts", "type", "warned")

    def __init__(self, index: int, order: int, added: dict[str, Any] | None) -> None:
        self.index = index
        self.order = order
        self.added = added
        self.done: dict[str, Any] | None = None
        source = added or {}
        self.type: str = str(source.get("type"))
        self.id: str | None = _str_or_none(source.get("id"))
        self.parts: dict[PartKey, Part] = {}
        #: Per-item defect codes already reported, so one broken item yields one line per class.
        self.warned: set[str] = set()

    @property
    def call_id(self) -> str | None:
        src = self.done if self.done is not None else self.added
        return _str_or_none(src.get("call_id")) if src is not None else None

    @property
    def effective_id(self) -> str | None:
        if self.id is not None:
            return self.id
        return _str_or_none(self.done.get("id")) if self.done is not None else None

    def part(self, key: PartKey) -> Part:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = Part()
        return part


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def sdk_identity(item: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """The openai SDK's identity of an item: calls are known by call_id alone, the rest by id too."""
    kind = str(item.get("type"))
    call_id = _str_or_none(item.get("call_id"))
    if kind in CALL_TYPES:
        return kind, None, call_id
    return kind, _str_or_none(item.get("id")), call_id


def sdk_compatible(previous: dict[str, Any], replacement: dict[str, Any]) -> bool:
    """The SDK accepts a changed id only when the earlier one was missing on a call."""
    prev_id = previous.get("id")
    return prev_id == replacement.get("id") or (
        prev_id is None and previous.get("type") in ("function_call", "custom_tool_call")
    )


def item_texts(item: dict[str, Any]) -> dict[PartKey, str]:
    """The text slots of a complete item as ``output_item.done`` or the final response carry it."""
    kind = item.get("type")
    texts: dict[PartKey, str] = {}
    if kind == "message":
        for i, part in enumerate(_list(item.get("content"))):
            if part.get("type") == "output_text":
                texts["text", i] = _text(part.get("text"))
            elif part.get("type") == "refusal":
                texts["refusal", i] = _text(part.get("refusal"))
    elif kind == "reasoning":
        for i, part in enumerate(_list(item.get("content"))):
            texts["reasoning", i] = _text(part.get("text"))
        for i, part in enumerate(_list(item.get("summary"))):
            texts["summary", i] = _text(part.get("text"))
    elif kind == "function_call":
        texts["arguments", None] = _text(item.get("arguments"))
    elif kind == "custom_tool_call":
        texts["input", None] = _text(item.get("input"))
    return texts


def _list(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def slot_views(item: Item, final: dict[str, Any] | None) -> dict[PartKey, list[tuple[str, str]]]:
    """Every text slot of ``item`` with the views that carry it, in the order a stream sends them."""
    done_texts = item_texts(item.done) if item.done is not None else None
    final_texts = item_texts(final) if final is not None else None
    keys: list[PartKey] = list(item.parts)
    for source in (done_texts, final_texts):
        for key in source or ():
            if key not in item.parts and key not in keys:
                keys.append(key)
    slots: dict[PartKey, list[tuple[str, str]]] = {}
    for key in keys:
        views: list[tuple[str, str]] = []
        part = item.parts.get(key)
        if part is not None:
            if part.has_deltas:
                views.append(("deltas", "".join(part.pieces)))
            if part.done_text is not None:
                views.append(("done event", part.done_text))
            if part.part_done_text is not None:
                views.append(("part done", part.part_done_text))
        # A slot that an item view lacks while the stream had it is text that view lost.
        if done_texts is not None:
            views.append(("output_item.done", done_texts.get(key, "")))
        if final_texts is not None:
            views.append(("final", final_texts.get(key, "")))
        slots[key] = views
    return slots


def compare_views(item: Item, final: dict[str, Any] | None) -> list[Defect]:
    """Compare every text slot of ``item`` across its views; one defect per disagreeing slot."""
    defects: list[Defect] = []
    for key, views in slot_views(item, final).items():
        defect = _judge(item, key, views)
        if defect is not None:
            defects.append(defect)
    return defects


def reasoning_chars(item: Item, final: dict[str, Any] | None) -> int:
    """Characters of reasoning an item holds, by the fullest view of each slot."""
    if item.type != "reasoning":
        return 0
    return sum(max((len(t) for _, t in views), default=0) for views in slot_views(item, final).values())


def _judge(item: Item, key: PartKey, views: list[tuple[str, str]]) -> Defect | None:
    values = {text for _, text in views}
    if len(values) < 2:
        return None
    kind = key[0]
    longest = max(values, key=len)
    shortest = min(values, key=len)
    where = "" if key[1] is None else f" part {key[1]}"
    summary = ", ".join(f"{name} {len(text)} chars" for name, text in views)
    if kind in ("reasoning", "summary") and all(longest.startswith(v) for v in values):
        short_views = [name for name, text in views if len(text) < len(longest)]
        lost = len(longest) - len(shortest)
        return Defect(
            code="reasoning_tail_lost",
            detail=f"{kind}{where}: {summary}; {', '.join(short_views)} lack the last {lost} chars",
            output_index=item.index,
            item_id=item.effective_id,
            lost_chars=lost,
        )
    first = views[0][1]
    other_name, other = next((name, text) for name, text in views if text != first)
    pos = _first_difference(first, other)
    return Defect(
        code=_MISMATCH_CODE[kind],
        detail=(
            f"{kind}{where}: {summary}; {views[0][0]} and {other_name} differ at char {pos}: "
            f"{first[pos : pos + 24]!r} vs {other[pos : pos + 24]!r}"
        ),
        output_index=item.index,
        item_id=item.effective_id,
    )


def _first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def match_final(items: list[Item], final: list[dict[str, Any]]) -> dict[int, int]:
    """Pair streamed items (by output_index) with positions in the final output.

    Strategy: the same id first (ids are what the contract promises), then the same call_id, then the
    final item at the streamed output_index if its type agrees, then the next unclaimed final item of the
    same type. The looser passes are what let the audit *report* reminted ids instead of calling the item
    missing.
    """
    pairs: dict[int, int] = {}
    used: set[int] = set()

    def claim(item: Item, pos: int) -> None:
        pairs[item.index] = pos
        used.add(pos)

    by_id: dict[tuple[str, str], int] = {}
    by_call: dict[tuple[str, str], int] = {}
    for pos, f in enumerate(final):
        fid, fcall = _str_or_none(f.get("id")), _str_or_none(f.get("call_id"))
        if fid is not None:
            by_id.setdefault((str(f.get("type")), fid), pos)
        if fcall is not None:
            by_call.setdefault((str(f.get("type")), fcall), pos)
    for table, attr in ((by_id, "effective_id"), (by_call, "call_id")):
        for item in items:
            key = getattr(item, attr)
            if item.index in pairs or key is None:
                continue
            found = table.get((item.type, key))
            if found is not None and found not in used:
                claim(item, found)
    for item in items:
        pos = item.index
        if (
            item.index not in pairs
            and 0 <= pos < len(final)
            and pos not in used
            and final[pos].get("type") == item.type
        ):
            claim(item, pos)
    for item in items:
        if item.index in pairs:
            continue
        for pos, f in enumerate(final):
            if pos not in used and f.get("type") == item.type:
                claim(item, pos)
                break
    return pairs
