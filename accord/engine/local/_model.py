"""The Llama forward pass in torch, over one step's batch of rows from many sequences.

Where the C kernels read every matrix (the usual case on CPU) the engine runs ``NativeModel``
(``_native``) instead, and never imports torch. Everywhere else (a GPU, a float model, no C compiler at
install) the step runs here op by op: prompt rows multiply in float32 (see
``accord.kernels.linear``; on CPUs without native bf16 arithmetic the bf16 GEMM was both the slowest and
the least precise step of the prompt, and its rounding moved near-tied first tokens), decode rows through
torch's 4-bit kernel (or the C kernels' matrix product, where they are built) with bf16 activations.
The KV cache is bf16 on both paths.

Every op is row-wise or works on one sequence's rows at a time, so a request's numbers do not depend on
the other rows of the step: a step that holds both prompt and decode rows runs the two parts one after
the other, each as it would run alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from accord.engine.local._batch import StepBatch, build_batch
from accord.engine.local._gguf import LlamaConfig
from accord.engine.local._heap import no_huge_pages
from accord.engine.local._scheduler import Work
from accord.engine.local._weights import ModelWeights
from accord.kernels.attention import decode_attention, prefill_attention, write_kv
from accord.kernels.linear import Linear
from accord.kernels.noise import SamplingRow
from accord.kernels.norm import rms_norm
from accord.kernels.rotary import RotaryTable, apply_rotary
from accord.kernels.sampling import sample

REFINE_TOP = 128


class KVCache:
    """Keys and values of every layer: ``layer(i)`` is [2, kv_heads, blocks, block_size, head_dim].

    The torch path's cache (the C step's is ``NativeCache``).
    """

    def __init__(
        self,
        n_layers: int,
        kv_heads: int,
        head_dim: int,
        num_blocks: int,
        block_size: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        # Uninitialised on purpose: pages are only committed when a block is first used, and they are
        # small pages, or the first block would commit 2 MiB in every layer (see ``_heap``).
        self.data = torch.empty(
            n_layers, 2, kv_heads, num_blocks, block_size, head_dim, dtype=dtype, device=device
        )
        if self.data.device.type == "cpu":
            no_huge_pages(self.data.data_ptr(), self.nbytes)
        self.block_size = block_size

    def layer(self, i: int) -> torch.Tensor:
        return self.data[i]

    def clear(self, blocks: Sequence[int]) -> None:
        """Zero newly handed-out blocks: masked positions of a partly filled block must hold finite
        numbers, since zero attention weight times NaN is still NaN."""
        if not blocks:
            return
        self.data.index_fill_(3, torch.tensor(blocks, dtype=torch.int64, device=self.data.device), 0)

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size()


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

    def batch(self, work: list[Work]) -> StepBatch:
        """The step's inputs as tensors."""
        return build_batch(work, self.cache.block_size, self.cache.data.device, self.dtype)

    @torch.inference_mode()
    def forward(self, batch: StepBatch) -> torch.Tensor:
        """float32 logits [len(batch.logit_rows), vocab]."""
        return self._refine(*self._torch_rows(batch))

    @torch.inference_mode()
    def sample(self, logits: torch.Tensor, rows: list[SamplingRow]) -> list[int]:
        return sample(logits, rows)

    def _torch_rows(self, batch: StepBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row op by op: approximate logits and the final hidden state of ``batch.logit_rows``."""
        last = self._torch_hidden(batch)
        if batch.logit_rows.numel() == 0:
            return last.new_empty(0, self.weights.head.out_features), last
        return self.weights.head.matmul(last.to(self.dtype)).float(), last

    def _torch_hidden(self, batch: StepBatch) -> torch.Tensor:
        """Every row op by op: the final normalised hidden state of ``batch.logit_rows``."""
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
        return rms_norm(x.index_select(0, batch.logit_rows), self.weights.norm, cfg.norm_eps)

    def _refine(self, logits: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """Recompute the top logits of each row in float32 from the stored output rows.

        The output projection is approximate (4-bit on CPU, and its bf16 result is rounded to steps of
        0.125 around a logit of 20 -- wider than the gap between the two best tokens often is), so greedy
        decoding would pick between near-ties by rounding. Only the leaders can win, so only they are
        recomputed; the rest keep approximate logits, which moves little probability mass.
        """
        k = min(REFINE_TOP, logits.shape[1])
        if logits.shape[0] == 0:
            return logits
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
