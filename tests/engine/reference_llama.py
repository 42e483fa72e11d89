"""A plain float32 Llama forward pass over a GGUF file, for checking the engine's numbers.

Written for clarity, not speed: weights from ``gguf.quants.dequantize``, full causal attention
recomputed from scratch, llama.cpp's pairwise rotation applied to the rows as the file stores them.
"""

from __future__ import annotations

import math
from pathlib import Path

import gguf
import numpy as np
import torch

from accord.engine.local._gguf import read_model_file


class ReferenceLlama:
    def __init__(self, path: Path) -> None:
        # The file is parsed by the engine's reader (a view over gguf's), but every number is
        # dequantised by the gguf package itself.
        model = read_model_file(path)
        cfg = model.config
        self.layers, self.heads, self.kv_heads = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads
        self.base, self.eps, self.head_dim = cfg.rope_base, cfg.norm_eps, cfg.head_dim
        self.w: dict[str, torch.Tensor] = {}
        for name, t in model.tensors.items():
            values = gguf.quants.dequantize(np.array(t.data), gguf.GGMLQuantizationType(t.ggml_type))
            self.w[name] = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).reshape(t.shape)

    def logits(self, ids: list[int]) -> torch.Tensor:
        """float32 logits for every position of ``ids``."""
        w, d, t = self.w, self.head_dim, len(ids)
        x = w["token_embd.weight"][torch.tensor(ids)]
        angles = torch.outer(torch.arange(t, dtype=torch.float64), self.base ** (-torch.arange(0, d, 2) / d))
        cos, sin = angles.cos().float()[:, None], angles.sin().float()[:, None]

        def rotate(v: torch.Tensor) -> torch.Tensor:
            a, b = v[..., 0::2], v[..., 1::2]
            out = torch.empty_like(v)
            out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
            return out

        def norm(v: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            return v / torch.sqrt((v * v).mean(-1, keepdim=True) + self.eps) * weight

        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        for i in range(self.layers):
            p = f"blk.{i}."
            h = norm(x, w[p + "attn_norm.weight"])
            q = rotate((h @ w[p + "attn_q.weight"].T).view(t, self.heads, d))
            k = rotate((h @ w[p + "attn_k.weight"].T).view(t, self.kv_heads, d))
            v = (h @ w[p + "attn_v.weight"].T).view(t, self.kv_heads, d)
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(d)
            attn = torch.einsum("hqk,khd->qhd", scores.masked_fill(causal, float("-inf")).softmax(-1), v)
            x = x + attn.reshape(t, -1) @ w[p + "attn_output.weight"].T
            h = norm(x, w[p + "ffn_norm.weight"])
            gate = torch.nn.functional.silu(h @ w[p + "ffn_gate.weight"].T)
            x = x + (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        head = w.get("output.weight", w["token_embd.weight"])
        return norm(x, w["output_norm.weight"]) @ head.T
