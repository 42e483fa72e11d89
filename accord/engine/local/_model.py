"""The Llama forward pass over one step's batch of rows from many sequences.

Two paths. Where the C kernels read every matrix (``accord.kernels.decode``; the usual case on CPU), a
step is one call into them per kind of row: prompt rows with float32 activations against the weights'
exact values, then decode rows with 8-bit activations. Otherwise (a GPU, a float model, no C compiler at
install) the step runs here op by op in torch: prompt rows multiply in float32 (see
``accord.kernels.linear``; on CPUs without native bf16 arithmetic the bf16 GEMM was both the slowest and
the least precise step of the prompt, and its rounding moved near-tied first tokens), decode rows through
torch's 4-bit kernel with bf16 activations. The KV cache is bf16 on both paths.

Every op is row-wise or works on one sequence's rows at a time, so a request's numbers do not depend on
the other rows of the step: a step that holds both prompt and decode rows runs the two parts one after
the other, each as it would run alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from accord.engine.local._batch import StepBatch, StepRows, build_batch, build_rows
from accord.engine.local._blocks import KVCache
from accord.engine.local._gguf import LlamaConfig
from accord.engine.local._scheduler import Work
from accord.engine.local._weights import ModelWeights
from accord.kernels import decode
from accord.kernels.attention import decode_attention, prefill_attention, write_kv
from accord.kernels.decode import DecodeLayer, DecodeModel, DecodeShape, PackedLinear
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
        self.decoder = _decoder(config, weights, cache, self.rotary)

    def batch(self, work: list[Work]) -> StepBatch | StepRows:
        """The step's inputs, laid out for the path that runs them."""
        block_size = self.cache.block_size
        if self.decoder is not None:
            return build_rows(work, block_size)
        return build_batch(work, block_size, self.cache.data.device, self.dtype)

    def forward(self, batch: StepBatch | StepRows) -> torch.Tensor:
        """float32 logits [len(batch.logit_rows), vocab]."""
        if isinstance(batch, StepRows):
            return self._native(batch)
        return self._refine(*self._torch_rows(batch))

    def _native(self, rows: StepRows) -> torch.Tensor:
        """The C step: prompt rows (float32 activations), then decode rows (8-bit), each part alone."""
        assert self.decoder is not None
        split = rows.prompt_rows
        parts = []
        if split:
            logit_rows = [r for r in rows.logit_rows if r < split]
            parts.append(self._rows(rows, 0, split, logit_rows, precise=True))
        if len(rows.token_ids) > split:
            parts.append(self._rows(rows, split, len(rows.token_ids), None, precise=False))
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def _rows(
        self, rows: StepRows, begin: int, end: int, logit_rows: list[int] | None, *, precise: bool
    ) -> torch.Tensor:
        """Rows ``begin:end`` through the C step: the logits of ``logit_rows`` (all rows when None)."""
        assert self.decoder is not None
        wanted = list(range(end - begin)) if logit_rows is None else [r - begin for r in logit_rows]
        return self.decoder.step(
            rows.token_ids[begin:end],
            rows.positions[begin:end],
            rows.tables,
            rows.row_tables[begin:end],
            wanted,
            precise=precise,
        )

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


def _decoder(
    config: LlamaConfig, weights: ModelWeights, cache: KVCache, rotary: RotaryTable
) -> DecodeModel | None:
    """The C decode step over these weights, where every matrix is one the kernels read (else None)."""
    matrices = [m for layer in weights.layers for m in (layer.qkv, layer.out, layer.gate_up, layer.down)]
    if not decode.available() or cache.data.device.type != "cpu" or cache.data.dtype != torch.bfloat16:
        return None
    if not all(isinstance(m, PackedLinear) for m in [*matrices, weights.head]):
        return None
    if config.head_dim % 32 or config.head_dim > 256 or config.n_embd % 32 or config.n_ff % 32:
        return None
    if config.n_heads % config.n_kv_heads or config.n_heads // config.n_kv_heads > 8:  # csrc MAX_GROUP
        return None
    if cache.block_size != 16:  # a block's keys are one vector of 16 positions per dimension there
        return None
    layers = [
        DecodeLayer(
            attn_norm=layer.attn_norm.float().contiguous(),
            ffn_norm=layer.ffn_norm.float().contiguous(),
            qkv=layer.qkv,  # type: ignore[arg-type]
            out=layer.out,  # type: ignore[arg-type]
            gate_up=layer.gate_up,  # type: ignore[arg-type]
            down=layer.down,  # type: ignore[arg-type]
        )
        for layer in weights.layers
    ]
    shape = DecodeShape(
        config.n_heads, config.n_kv_heads, config.head_dim, config.n_ff, config.norm_eps, REFINE_TOP
    )
    head, table = weights.head, weights.embedding.packed
    assert isinstance(head, PackedLinear)
    if table is None:  # a token table the kernels cannot read
        return None
    norm = weights.norm.float().contiguous()
    return DecodeModel(shape, layers, table, norm, head, rotary.rotations, cache.data)
