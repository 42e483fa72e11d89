"""Stream versus final snapshot: the checks that found the recorded production defects.

The final response (the terminal event's ``response.output``) must name every streamed item by the same
id and call_id, in the same order, with nothing added and nothing dropped (SPEC W2/W3). Servers that
rebuild the snapshot with a second parse mint fresh ids, reorder reasoning after the message, or drop what
the stream showed; each of those is reported here, with the streamed items paired to final ones by
:func:`match_final` so that a reminted id reads as a mismatch rather than as a missing item.
"""

from __future__ import annotations

from typing import Any

from accord.replay._items import Item, item_texts, match_final, sdk_compatible, sdk_identity
from accord.replay.verdict import Defect


def check_final(
    items: list[Item], terminal: str | None, response: dict[str, Any] | None
) -> tuple[dict[int, dict[str, Any]], list[Defect]]:
    """Pair streamed items with the final output; return the pairs and the defects found."""
    defects: list[Defect] = []
    defects.extend(_conflicting_identities(items, response))
    output = response.get("output") if response is not None else None
    final: list[dict[str, Any]] = (
        [f for f in output if isinstance(f, dict)] if isinstance(output, list) else []
    )
    reported: set[int] = set()
    if terminal == "response.completed":
        sdk_defects = _sdk_completion_checks(items, final)
        reported = {
            d.output_index for d in sdk_defects if d.code == "item_id_mismatch" and d.output_index is not None
        }
        defects.extend(sdk_defects)
    if not isinstance(output, list):
        return {}, defects

    pairs = match_final(items, final)
    finals = {index: final[pos] for index, pos in pairs.items()}
    by_index = {item.index: item for item in items}
    for index, f in finals.items():
        item = by_index[index]
        streamed_id, final_id = item.effective_id, f.get("id")
        if streamed_id is not None and final_id != streamed_id and index not in reported:
            defects.append(
                Defect(
                    code="item_id_mismatch",
                    detail=f"{item.type} at output_index {index}: streamed as {streamed_id!r}, final {final_id!r}",
                    output_index=index,
                    item_id=streamed_id,
                )
            )
        call_id = item.call_id
        if call_id is not None and f.get("call_id") != call_id:
            defects.append(
                Defect(
                    code="call_id_mismatch",
                    detail=f"{item.type} at output_index {index}: streamed call_id {call_id!r}, "
                    f"final {f.get('call_id')!r}",
                    output_index=index,
                    item_id=streamed_id,
                )
            )

    positions = [pairs[item.index] for item in items if item.index in pairs]
    if positions != sorted(positions) or any(pairs[i] != i for i in pairs):
        streamed = [item.type for item in items]
        defects.append(
            Defect(
                code="output_order",
                detail=f"streamed {streamed}, final {[f.get('type') for f in final]}",
            )
        )
    if terminal in ("response.completed", "response.incomplete"):
        for item in items:
            if item.index in pairs:
                continue
            defects.append(
                Defect(
                    code="item_missing_from_final",
                    detail=f"{item.type} {item.effective_id!r} (output_index {item.index}) is not in the final output",
                    output_index=item.index,
                    item_id=item.effective_id,
                )
            )
            lost = _streamed_reasoning_chars(item)
            if lost:
                defects.append(
                    Defect(
                        code="reasoning_tail_lost",
                        detail=f"reasoning {item.effective_id!r}: {lost} streamed chars, absent from the final output",
                        output_index=item.index,
                        item_id=item.effective_id,
                        lost_chars=lost,
                    )
                )
    extra = [pos for pos in range(len(final)) if pos not in set(pairs.values())]
    if extra:
        described = ", ".join(f"{final[p].get('type')} {final[p].get('id')!r}" for p in extra)
        defects.append(
            Defect(code="item_extra_in_final", detail=f"final output holds items never streamed: {described}")
        )
    return finals, defects


def _streamed_reasoning_chars(item: Item) -> int:
    if item.type != "reasoning":
        return 0
    best = 0
    for (kind, _), part in item.parts.items():
        if kind in ("reasoning", "summary"):
            best += max(len("".join(part.pieces)), len(part.done_text or ""), len(part.part_done_text or ""))
    if item.done is not None:
        best = max(best, sum(len(t) for t in item_texts(item.done).values()))
    return best


def _sdk_completion_checks(items: list[Item], final: list[dict[str, Any]]) -> list[Defect]:
    """What the SDK checks at ``response.completed`` (A6): both raise, and nothing else does."""
    defects: list[Defect] = []
    final_items = {sdk_identity(f): f for f in final}
    streamed = [sdk_identity(src) for i in items if (src := i.done or i.added) is not None]
    # Identities shared by two items are reported as conflicting; comparing them here would pair strangers.
    shared = {ident for ident in streamed if streamed.count(ident) > 1}
    for item in items:
        if item.done is not None:
            if sdk_identity(item.done) in shared:
                continue
            f = final_items.get(sdk_identity(item.done))
            if f is not None and not sdk_compatible(item.done, f):
                defects.append(
                    Defect(
                        code="item_id_mismatch",
                        detail=f"{item.type} call_id {item.call_id!r}: done id {item.done.get('id')!r}, "
                        f"final id {f.get('id')!r}; the SDK raises",
                        output_index=item.index,
                        item_id=item.effective_id,
                        breaks_sdk=True,
                    )
                )
        elif item.added is not None:
            f = final_items.get(sdk_identity(item.added))
            if f is None or not sdk_compatible(item.added, f):
                defects.append(
                    Defect(
                        code="unfinished_items",
                        detail=f"{item.type} {item.effective_id!r} (output_index {item.index}) has no "
                        "output_item.done and no matching final item; the SDK raises",
                        output_index=item.index,
                        item_id=item.effective_id,
                        breaks_sdk=True,
                    )
                )
    return defects


def _conflicting_identities(items: list[Item], response: dict[str, Any] | None) -> list[Defect]:
    defects: list[Defect] = []
    seen: dict[tuple[str, str | None, str | None], Item] = {}
    for item in items:
        source = item.done if item.done is not None else item.added
        if source is None:
            continue
        identity = sdk_identity(source)
        if identity[1] is None and identity[2] is None:
            continue
        first = seen.get(identity)
        if first is None:
            seen[identity] = item
            continue
        defects.append(
            Defect(
                code="conflicting_identities",
                detail=f"output_index {first.index} and {item.index} are both {identity}",
                output_index=item.index,
                item_id=item.effective_id,
                breaks_sdk=first.done is not None and item.done is not None,
            )
        )
    output = response.get("output") if response is not None else None
    if isinstance(output, list) and not defects:
        calls = [f.get("call_id") for f in output if isinstance(f, dict) and f.get("call_id") is not None]
        repeated = sorted({c for c in calls if calls.count(c) > 1}, key=str)
        if repeated:
            defects.append(
                Defect(code="conflicting_identities", detail=f"final output repeats call_id {repeated}")
            )
    return defects
