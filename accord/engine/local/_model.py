"""The Llama forward pass over one step's batch of rows from many sequences.

Activations stay float32 except where a kernel wants the compute dtype: the 4-bit decode matmul reads
bf16 rows, and the KV cache and attention are bf16. Prompt rows multiply in float32 (see
``accord.kernels.linear``): on CPUs without native bf16 arithmetic the bf16 GEMM was both the slowest
and the least precise step of the prompt, and its rounding was what moved near-tied first tokens.
Every op is row-wise or works on one sequence's rows at a time, so a request's numbers do not depend on
the other rows of the step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from accord.engine.local._batch import StepBatch
from accord.engine.local._blocks import KVCache
from accord.engine.local._gguf import LlamaConfig
from accord.engine.local._weights import ModelWeights
from accord.kernels.attention import decode_attention, prefill_attention, write_kv
from accord.kernels.linear import Linear
from accord.kernels.norm import rms_norm
from accord.kernels.rotary import RotaryTable, apply_rotary

REFINE_TOP = 128


class LlamaModel:
    def __init__(
        self,
        config: LlamaConfig,
        weights: ModelWeights,
        cache: KVCache,
        dtype: torch.dtype,
        max_positions: int,
    ) -> None:
        self.config = config
        self.weights = weights
        self.cache = cache
        self.dtype = dtype
        self.rotary = RotaryTable(
            config.head_dim,
            config.rope_base,
            max_positions,
            position_scale=config.rope_scale,
            freq_factors=weights.rope_freq_factors,
            device=weights.norm.device,
        )

    def forward(self, batch: StepBatch) -> torch.Tensor:
        """float32 logits [len(batch.logit_rows), vocab]."""
        cfg = self.config
        n = batch.token_ids.shape[0]
        heads, kv_heads, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        x = self.weights.embedding.lookup(batch.token_ids)
        rotations = self.rotary.lookup(batch.positions)
        for i, layer in enumerate(self.weights.layers):
            kv = self.cache.layer(i)
            h = rms_norm(x, layer.attn_norm, cfg.norm_eps)
            qkv = _linear(h, layer.qkv, batch.dense_rows, self.dtype)
            rotated = apply_rotary(qkv[:, : (heads + kv_heads) * d].view(n, heads + kv_heads, d), rotations)
            rotated = rotated.to(self.dtype)
            q, k = rotated[:, :heads], rotated[:, heads:]
            write_kv(kv, batch.slots, k, qkv[:, (heads + kv_heads) * d :].view(n, kv_heads, d))
            attn = self._attention(q, kv, batch).reshape(n, heads * d)
            x.add_(_linear(attn, layer.out, batch.dense_rows, self.dtype))
            h = rms_norm(x, layer.ffn_norm, cfg.norm_eps)
            gate_up = _linear(h, layer.gate_up, batch.dense_rows, self.dtype)
            act = F.silu(gate_up[:, : cfg.n_ff]) * gate_up[:, cfg.n_ff :]
            x.add_(_linear(act, layer.down, batch.dense_rows, self.dtype))
        if batch.logit_rows.numel() == 0:
            return x.new_empty(0, self.weights.head.out_features)
        last = rms_norm(x.index_select(0, batch.logit_rows), self.weights.norm, cfg.norm_eps)
        logits = self.weights.head.matmul(last.to(self.dtype)).float()
        return self._refine(logits, last)

    def _refine(self, logits: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """Recompute the top logits of each row in float32 from the stored output rows.

        The output projection is approximate (4-bit on CPU, and its bf16 result is rounded to steps of
        0.125 around a logit of 20 -- wider than the gap between the two best tokens often is), so greedy
        decoding would pick between near-ties by rounding. Only the leaders can win, so only they are
        recomputed; the rest keep approximate logits, which moves little probability mass.
        """
        k = min(REFINE_TOP, logits.shape[1])
        top = logits.topk(k, dim=1).indices
        rows = self.weights.head_rows(top.reshape(-1)).view(top.shape[0], k, -1)
        exact = (rows * hidden[:, None, :]).sum(-1)
        return logits.scatter_(1, top, exact)

    def _attention(self, q: torch.Tensor, kv: torch.Tensor, batch: StepBatch) -> torch.Tensor:
        parts = [prefill_attention(q[s.begin : s.end], kv, s.blocks, s.start) for s in batch.spans] + [
            decode_attention(q[g.begin : g.end], kv, g.blocks, g.mask) for g in batch.groups
        ]
        return parts[0] if len(parts) == 1 else torch.cat(parts)


def _linear(x: torch.Tensor, weight: Linear, dense_rows: int, dtype: torch.dtype) -> torch.Tensor:
    """float32 ``x @ W.T``: the first ``dense_rows`` rows in float32, the rest through ``matmul`` in ``dtype``."""
    if dense_rows == 0:
        return weight.matmul(x.to(dtype)).float()
    dense = F.linear(x[:dense_rows].float(), weight.dense(torch.float32))
    if dense_rows == x.shape[0]:
        return dense
    return torch.cat([dense, weight.matmul(x[dense_rows:].to(dtype)).float()])
