"""Attention over the paged cache against dense causal attention computed the plain way."""

from __future__ import annotations

import math

import torch

from accord.kernels.attention import decode_attention, prefill_attention, write_kv

KV_HEADS, HEADS, D, BLOCK, NUM_BLOCKS = 2, 6, 16, 4, 32


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, positions: list[int]) -> torch.Tensor:
    """q [T, H, D] at ``positions``; k, v [S, KVH, D] for positions 0..S-1. float64 loops."""
    rep = HEADS // KV_HEADS
    out = torch.zeros(q.shape, dtype=torch.float64)
    for t, pos in enumerate(positions):
        for h in range(HEADS):
            kh = k[: pos + 1, h // rep].double()
            scores = kh @ q[t, h].double() / math.sqrt(D)
            out[t, h] = torch.softmax(scores, 0) @ v[: pos + 1, h // rep].double()
    return out.float()


def stale_cache(seed: int) -> torch.Tensor:
    """A cache full of finite leftovers from earlier requests."""
    return torch.randn(2, KV_HEADS, NUM_BLOCKS, BLOCK, D, generator=torch.Generator().manual_seed(seed))


def fill(cache: torch.Tensor, blocks: list[int], length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    k, v = torch.randn(length, KV_HEADS, D, generator=g), torch.randn(length, KV_HEADS, D, generator=g)
    slots = torch.tensor([blocks[p // BLOCK] * BLOCK + p % BLOCK for p in range(length)])
    write_kv(cache, slots, k, v)
    return k, v


def test_written_keys_land_in_their_blocks() -> None:
    cache = stale_cache(0)
    k, v = fill(cache, [5, 2], 6, seed=1)
    assert torch.equal(cache[0, :, 5, 3], k[3])
    assert torch.equal(cache[1, :, 2, 1], v[5])


def test_prefill_chunks_match_dense_causal_attention() -> None:
    cache, blocks = stale_cache(2), [7, 2, 19, 4, 11]
    k, v = fill(cache, blocks, 18, seed=3)
    q = torch.randn(18, HEADS, D, generator=torch.Generator().manual_seed(4))
    expected = reference(q, k, v, list(range(18)))
    table = torch.tensor(blocks)
    torch.testing.assert_close(prefill_attention(q, cache, table, 0), expected, rtol=1e-4, atol=1e-4)
    # A later chunk (positions 10..17) sees the earlier positions through the cache.
    torch.testing.assert_close(
        prefill_attention(q[10:], cache, table, 10), expected[10:], rtol=1e-4, atol=1e-4
    )


def test_decode_rows_of_different_lengths_padded_to_whole_blocks() -> None:
    cache = stale_cache(5)
    tables = [[3, 9, 1], [12, 5, 20]]
    lengths = [10, 12]  # last positions 9 and 11: both need 3 blocks
    kvs = [fill(cache, t, n, seed=6 + i) for i, (t, n) in enumerate(zip(tables, lengths, strict=True))]
    q = torch.randn(2, HEADS, D, generator=torch.Generator().manual_seed(8))
    valid = torch.arange(3 * BLOCK)[None, :] < torch.tensor(lengths)[:, None]
    got = decode_attention(q, cache, torch.tensor(tables), valid)
    for i, (n, (k, v)) in enumerate(zip(lengths, kvs, strict=True)):
        torch.testing.assert_close(
            got[i : i + 1], reference(q[i : i + 1], k, v, [n - 1]), rtol=1e-4, atol=1e-4
        )


def test_decode_attention_is_the_same_alone_and_in_a_group() -> None:
    """Batch invariance: a row's output does not change with the other rows of its group."""
    cache = stale_cache(9).bfloat16()
    g = 6
    tables = torch.randperm(NUM_BLOCKS, generator=torch.Generator().manual_seed(10))[: g * 2].view(g, 2)
    valid = torch.arange(2 * BLOCK)[None, :] <= torch.tensor([7, 5, 6, 7, 4, 3])[:, None]
    q = torch.randn(g, HEADS, D, generator=torch.Generator().manual_seed(11)).bfloat16()
    together = decode_attention(q, cache, tables, valid)
    for i in range(g):
        alone = decode_attention(q[i : i + 1], cache, tables[i : i + 1], valid[i : i + 1])
        assert torch.equal(alone[0], together[i])


def test_consecutive_blocks_read_in_place_give_the_same_result() -> None:
    cache = stale_cache(12)
    fill(cache, [4, 5, 6], 11, seed=13)
    q = torch.randn(11, HEADS, D, generator=torch.Generator().manual_seed(14))
    as_range = prefill_attention(q, cache, range(4, 7), 0)
    assert torch.equal(as_range, prefill_attention(q, cache, torch.tensor([4, 5, 6]), 0))
    valid = torch.arange(12)[None, :] < 11
    one = decode_attention(q[-1:], cache, range(4, 7), valid)
    assert torch.equal(one, decode_attention(q[-1:], cache, torch.tensor([[4, 5, 6]]), valid))
