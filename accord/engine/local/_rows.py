"""What one C step runs on (``accord.kernels.decode``), laid out from the scheduler's work as plain
lists.

Row order: prompt chunks first, then decode rows; prompt rows run with float32 activations and decode
rows with 8-bit ones, by a row's role and not by the size of the step, so a token's numbers do not
depend on what shares its step.
"""

from __future__ import annotations

from dataclasses import dataclass

from accord.engine.local._scheduler import Work


@dataclass(frozen=True, slots=True)
class StepRows:
    """One step's rows for the C step (``accord.kernels.decode``), as plain lists: building them costs
    no torch op, and each torch op gives the GIL up and may wait to get it back.

    Rows are ``prompt_rows`` prompt rows first, then the decode rows; ``tables`` holds each prompt chunk's
    cache blocks, then each decode row's, and ``row_tables`` says which table each row reads.
    """

    token_ids: list[int]
    positions: list[int]
    tables: list[list[int]]
    row_tables: list[int]
    prompt_rows: int
    #: Rows whose logits are needed, in the order of ``sampled``.
    logit_rows: list[int]
    sampled: list[Work]


def build_rows(work: list[Work], block_size: int) -> StepRows:
    prompts = [w for w in work if not w.seq.decoding or w.length > 1]
    decodes = [w for w in work if w.seq.decoding and w.length == 1]
    ids: list[int] = []
    positions: list[int] = []
    tables: list[list[int]] = []
    row_tables: list[int] = []
    logit_rows: list[int] = []
    sampled: list[Work] = []
    for w in prompts:
        ids.extend(w.seq.tokens[w.start : w.start + w.length])
        positions.extend(range(w.start, w.start + w.length))
        row_tables.extend([len(tables)] * w.length)
        tables.append(w.seq.blocks[: -(-(w.start + w.length) // block_size)])
        if w.samples:
            logit_rows.append(len(ids) - 1)
            sampled.append(w)
    prompt_rows = len(ids)
    for w in decodes:
        ids.append(w.seq.tokens[w.start])
        positions.append(w.start)
        row_tables.append(len(tables))
        tables.append(w.seq.blocks[: w.start // block_size + 1])
        logit_rows.append(len(ids) - 1)
        sampled.append(w)
    return StepRows(ids, positions, tables, row_tables, prompt_rows, logit_rows, sampled)
