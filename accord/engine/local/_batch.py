"""What one step of the torch forward pass runs on, laid out from the scheduler's work (the C step's
plain lists are ``accord.engine.local._rows``).

Row order: prompt chunks first, then decode rows sorted by how many cache blocks they attend over, so
each attention group is one contiguous range.

Prompt rows multiply by dense matrices and decode rows by the quantised kernels (where the device has
them). The choice goes by a row's role, not by the size of the step, so a token's numbers do not depend
on what shares its step or on how its prompt was cut into chunks; the dense path is also the more
precise of the two, which matters most for the prompt that every later token attends to.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from accord.engine.local._scheduler import Work
from accord.kernels.attention import Blocks


@dataclass(frozen=True, slots=True)
class PromptSpan:
    begin: int
    end: int
    #: Position of the chunk's first token.
    start: int
    #: The sequence's blocks covering positions 0 .. start + length - 1.
    blocks: Blocks


@dataclass(frozen=True, slots=True)
class DecodeGroup:
    begin: int
    end: int
    #: [G, n]: each member's first n blocks (all members attend over n blocks); a range when G is 1.
    blocks: Blocks
    #: [G, n * block_size]: 0 at the positions each member has reached, -inf past them (added to scores).
    mask: torch.Tensor


@dataclass(frozen=True, slots=True)
class StepBatch:
    token_ids: torch.Tensor
    positions: torch.Tensor
    slots: torch.Tensor
    #: Leading rows (the prompt chunks) that multiply by dense matrices.
    dense_rows: int
    spans: list[PromptSpan]
    groups: list[DecodeGroup]
    #: Rows whose logits are needed, in the order of ``sampled``.
    logit_rows: torch.Tensor
    sampled: list[Work]


def _table(blocks: list[int], device: torch.device) -> Blocks:
    """Consecutive blocks as a range (attention then reads them in place), others as a tensor."""
    if (
        blocks
        and blocks[-1] - blocks[0] == len(blocks) - 1
        and blocks == list(range(blocks[0], blocks[-1] + 1))
    ):
        return range(blocks[0], blocks[-1] + 1)
    return torch.tensor(blocks, dtype=torch.int64, device=device)


def _slots(blocks: list[int], start: int, end: int, block_size: int) -> list[int]:
    return [blocks[p // block_size] * block_size + p % block_size for p in range(start, end)]


def build_batch(work: list[Work], block_size: int, device: torch.device, dtype: torch.dtype) -> StepBatch:
    prompts = [w for w in work if not w.seq.decoding or w.length > 1]
    decodes = [w for w in work if w.seq.decoding and w.length == 1]
    decodes.sort(key=lambda w: w.start // block_size)

    ids: list[int] = []
    positions: list[int] = []
    slots: list[int] = []
    spans: list[PromptSpan] = []
    logit_rows: list[int] = []
    sampled: list[Work] = []
    for w in prompts:
        begin = len(ids)
        ids.extend(w.seq.tokens[w.start : w.start + w.length])
        positions.extend(range(w.start, w.start + w.length))
        slots.extend(_slots(w.seq.blocks, w.start, w.start + w.length, block_size))
        table = _table(w.seq.blocks[: -(-(w.start + w.length) // block_size)], device)
        spans.append(PromptSpan(begin, len(ids), w.start, table))
        if w.samples:
            logit_rows.append(len(ids) - 1)
            sampled.append(w)

    groups: list[DecodeGroup] = []
    i = 0
    while i < len(decodes):
        n_blocks = decodes[i].start // block_size + 1
        j = i
        while j < len(decodes) and decodes[j].start // block_size + 1 == n_blocks:
            j += 1
        members = decodes[i:j]
        begin = len(ids)
        group_blocks: Blocks
        if len(members) == 1:
            group_blocks = _table(members[0].seq.blocks[:n_blocks], device)
        else:
            group_blocks = torch.tensor(
                [w.seq.blocks[:n_blocks] for w in members], dtype=torch.int64, device=device
            )
        last = torch.tensor([w.start for w in members])
        # Built once per step in the attention dtype; a boolean mask would be converted in every layer.
        past = torch.arange(n_blocks * block_size)[None, :] > last[:, None]
        mask = torch.zeros(past.shape, dtype=dtype).masked_fill_(past, float("-inf"))
        for w in members:
            ids.append(w.seq.tokens[w.start])
            positions.append(w.start)
            slots.extend(_slots(w.seq.blocks, w.start, w.start + 1, block_size))
            logit_rows.append(len(ids) - 1)
            sampled.append(w)
        groups.append(DecodeGroup(begin, len(ids), group_blocks, mask.to(device)))
        i = j

    def tensor(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int64, device=device)

    return StepBatch(
        token_ids=tensor(ids),
        positions=tensor(positions),
        slots=tensor(slots),
        dense_rows=sum(w.length for w in prompts),
        spans=spans,
        groups=groups,
        logit_rows=tensor(logit_rows),
        sampled=sampled,
    )
