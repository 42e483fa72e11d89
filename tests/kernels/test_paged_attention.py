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


def paged(
    seq_len: int, blocks: list[int], seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    cache = torch.randn(2, KV_HEADS, NUM_BLOCKS * BLOCK, D, generator=g)  # stale finite contents
    k, v = torch.randn(seq_len, KV_HEADS, D, generator=g), torch.randn(seq_len, KV_HEADS, D, generator=g)
    slots = torch.tensor([blocks[p // BLOCK] * BLOCK + p % BLOCK for p in range(seq_len)])
    write_kv(cache[0], cache[1], slots, k, v)
    return cache, k, v, slots


def test_prefill_chunks_match_dense_causal_attention() -> None:
    blocks = [7, 2, 19, 4, 11]
    cache, k, v, slots = paged(18, blocks, seed=0)
    q = torch.randn(18, HEADS, D, generator=torch.Generator().manual_seed(1))
    expected = reference(q, k, v, list(range(18)))
    whole = prefill_attention(q, cache[0], cache[1], slots, 0)
    torch.testing.assert_close(whole, expected, rtol=1e-4, atol=1e-4)
    # A later chunk (positions 10..17) sees the earlier positions through the cache.
    tail = prefill_attention(q[10:], cache[0], cache[1], slots, 10)
    torch.testing.assert_close(tail, expected[10:], rtol=1e-4, atol=1e-4)


def test_decode_rows_of_different_lengths_padded_to_whole_blocks() -> None:
    tables = [[3, 9, 1], [12, 5, 20]]
    lengths = [10, 12]  # last positions 9 and 11: both need 3 blocks
    cache = torch.randn(2, KV_HEADS, NUM_BLOCKS * BLOCK, D, generator=torch.Generator().manual_seed(2))
    q = torch.randn(2, HEADS, D, generator=torch.Generator().manual_seed(3))
    kv_slots = torch.stack([torch.tensor([b * BLOCK + o for b in t for o in range(BLOCK)]) for t in tables])
    valid = torch.arange(3 * BLOCK)[None, :] < torch.tensor(lengths)[:, None]
    got = decode_attention(q, cache[0], cache[1], kv_slots, valid)
    for i, n in enumerate(lengths):
        k = cache[0][:, kv_slots[i, :n]].transpose(0, 1)
        v = cache[1][:, kv_slots[i, :n]].transpose(0, 1)
        torch.testing.assert_close(
            got[i : i + 1], reference(q[i : i + 1], k, v, [n - 1]), rtol=1e-4, atol=1e-4
        )


def test_decode_attention_is_the_same_alone_and_in_a_group() -> None:
    """Batch invariance: a row's output does not change with the other rows of its group."""
    cache = torch.randn(2, KV_HEADS, NUM_BLOCKS * BLOCK, D, generator=torch.Generator().manual_seed(4))
    cache = cache.bfloat16()
    g = 6
    kv_slots = torch.randperm(NUM_BLOCKS * BLOCK, generator=torch.Generator().manual_seed(5))[: g * 8].view(
        g, 8
    )
    valid = torch.arange(8)[None, :] <= torch.tensor([7, 5, 6, 7, 4, 3])[:, None]
    q = torch.randn(g, HEADS, D, generator=torch.Generator().manual_seed(6)).bfloat16()
    together = decode_attention(q, cache[0], cache[1], kv_slots, valid)
    for i in range(g):
        alone = decode_attention(q[i : i + 1], cache[0], cache[1], kv_slots[i : i + 1], valid[i : i + 1])
        assert torch.equal(alone[0], together[i])
