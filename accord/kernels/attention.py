"""Attention over a paged KV cache.

Theory of operation: the cache of one layer is two tensors ``[kv_heads, slots, head_dim]``; a slot is one
token's position in one block (``slot = block * block_size + offset``). A sequence owns a list of blocks,
so its keys are wherever its blocks happen to be; each call gathers them by slot index into a contiguous
tensor and runs torch's fused attention on that.

Shapes are chosen by the sequence alone, never by the batch: a prompt chunk attends over exactly its own
context, and decode rows are grouped by their padded context length (a whole number of blocks), so that a
request computes the same numbers whether it runs alone or next to others.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def write_kv(
    k_cache: torch.Tensor, v_cache: torch.Tensor, slots: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> None:
    """Store keys and values [N, kv_heads, head_dim] of N tokens at their ``slots`` [N]."""
    k_cache.index_copy_(1, slots, k.transpose(0, 1).to(k_cache.dtype))
    v_cache.index_copy_(1, slots, v.transpose(0, 1).to(v_cache.dtype))


def prefill_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, kv_slots: torch.Tensor, start: int
) -> torch.Tensor:
    """Causal attention of a chunk of ``T`` queries [T, heads, head_dim] at positions ``start..start+T-1``.

    ``kv_slots`` [start + T] are the slots of positions 0..start+T-1, the chunk's own already written.
    """
    t = q.shape[0]
    keys = k_cache.index_select(1, kv_slots).unsqueeze(0)
    values = v_cache.index_select(1, kv_slots).unsqueeze(0)
    query = q.transpose(0, 1).unsqueeze(0).to(keys.dtype)
    if start == 0:
        out = F.scaled_dot_product_attention(query, keys, values, is_causal=True, enable_gqa=True)
    else:
        rows = torch.arange(t, device=q.device)[:, None] + start
        cols = torch.arange(start + t, device=q.device)[None, :]
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=cols <= rows, enable_gqa=True)
    return out[0].transpose(0, 1)


def decode_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, kv_slots: torch.Tensor, valid: torch.Tensor
) -> torch.Tensor:
    """One query per sequence, ``q`` [G, heads, head_dim], over ``kv_slots`` [G, T] where ``valid`` [G, T].

    All G sequences share the padded length T. Slots past a sequence's end must hold finite numbers
    (the cache zeroes blocks when it hands them out); they are masked, so they contribute exactly zero.
    """
    g, t = kv_slots.shape
    kv_heads, head_dim = k_cache.shape[0], k_cache.shape[2]
    keys = k_cache.index_select(1, kv_slots.reshape(-1)).view(kv_heads, g, t, head_dim).transpose(0, 1)
    values = v_cache.index_select(1, kv_slots.reshape(-1)).view(kv_heads, g, t, head_dim).transpose(0, 1)
    # Query heads sharing a KV head sit next to each other, so grouping them turns GQA into plain
    # attention with ``heads / kv_heads`` queries per KV head -- no copies of the keys.
    query = q.reshape(g, kv_heads, -1, head_dim).to(keys.dtype)
    out = F.scaled_dot_product_attention(query, keys, values, attn_mask=valid[:, None, None, :])
    return out.reshape(g, -1, head_dim)
