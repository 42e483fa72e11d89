"""Attention over a paged KV cache.

Theory of operation: the cache of one layer is one tensor ``[2, kv_heads, blocks, block_size, head_dim]``
(keys, then values); a sequence owns a list of blocks, so its keys are wherever its blocks happen to be.
Each call gathers the sequence's blocks -- whole blocks, so one copy moves ``block_size`` positions --
into a contiguous tensor and runs torch's fused attention on that.

Shapes are chosen by the sequence alone, never by the batch: a prompt chunk attends over exactly its own
context, and decode rows are grouped by their number of blocks, so that a request computes the same
numbers whether it runs alone or next to others.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def write_kv(cache: torch.Tensor, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Store keys and values [N, kv_heads, head_dim] of N tokens at their ``slots`` [N].

    A slot is ``block * block_size + offset``.
    """
    two, kv_heads, blocks, block_size, head_dim = cache.shape
    flat = cache.view(two, kv_heads, blocks * block_size, head_dim)
    flat.index_copy_(2, slots, torch.stack([k, v]).transpose(1, 2).to(cache.dtype))


Blocks = torch.Tensor | range


def _gather(cache: torch.Tensor, blocks: Blocks) -> torch.Tensor:
    """[2, kv_heads, len(blocks) * block_size, head_dim]: the blocks' positions in order.

    A ``range`` of consecutive blocks (what a lone request usually holds, since the pool hands out
    blocks in order) is a view of the cache; anything else is copied out.
    """
    two, kv_heads, head_dim = cache.shape[0], cache.shape[1], cache.shape[-1]
    if isinstance(blocks, range):
        return cache[:, :, blocks.start : blocks.stop].view(two, kv_heads, -1, head_dim)
    return cache.index_select(2, blocks).view(two, kv_heads, -1, head_dim)


def prefill_attention(q: torch.Tensor, cache: torch.Tensor, blocks: Blocks, start: int) -> torch.Tensor:
    """Causal attention of a chunk of ``T`` queries [T, heads, head_dim] at positions ``start..start+T-1``.

    ``blocks`` hold positions 0..start+T-1 in order (the chunk's own keys already written).
    """
    t = q.shape[0]
    kv = _gather(cache, blocks)[:, :, : start + t].unsqueeze(1)
    query = q.transpose(0, 1).unsqueeze(0).to(kv.dtype)
    if start == 0:
        out = F.scaled_dot_product_attention(query, kv[0], kv[1], is_causal=True, enable_gqa=True)
    else:
        rows = torch.arange(t, device=q.device)[:, None] + start
        cols = torch.arange(start + t, device=q.device)[None, :]
        out = F.scaled_dot_product_attention(query, kv[0], kv[1], attn_mask=cols <= rows, enable_gqa=True)
    return out[0].transpose(0, 1)


def decode_attention(
    q: torch.Tensor, cache: torch.Tensor, blocks: Blocks, mask: torch.Tensor
) -> torch.Tensor:
    """One query per sequence, ``q`` [G, heads, head_dim], over ``blocks`` [G, n] (or, for G = 1, a range
    of n). ``mask`` [G, n * block_size] says which positions count: True where they do, or an additive
    float mask (0 / -inf) in the cache dtype, which spares the conversion on every call.

    Positions past a sequence's end must hold finite numbers (the cache zeroes blocks when it hands them
    out); they are masked, so they contribute exactly zero.
    """
    g = mask.shape[0]
    head_dim = cache.shape[-1]
    kv = _gather(cache, blocks if isinstance(blocks, range) else blocks.reshape(-1))
    kv = kv.view(2, kv.shape[1], g, -1, head_dim).transpose(1, 2)
    # Query heads sharing a KV head sit next to each other, so grouping them turns GQA into plain
    # attention with ``heads / kv_heads`` queries per KV head -- no copies of the keys.
    query = q.reshape(g, kv.shape[2], -1, head_dim).to(kv.dtype)
    out = F.scaled_dot_product_attention(query, kv[0], kv[1], attn_mask=mask[:, None, None, :])
    return out.reshape(g, -1, head_dim)
