"""RMSNorm, the only normalisation Llama-family models use."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, out_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dimension, computed in ``x``'s precision.

    The residual stream stays float32; the result is cast once to the matmul dtype here, so no
    separate conversion pass runs over the activations.
    """
    y = F.rms_norm(x, (x.shape[-1],), weight, eps)
    return y if out_dtype is None or out_dtype == y.dtype else y.to(out_dtype)
