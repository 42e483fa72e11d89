"""accord: an OpenAI Responses API server for open-weight models."""

import os

# Intel MKL's strict reproducibility mode (read at its first call, so it is set at import): without
# it, a float32 GEMM on two or more threads splits the inner dimension for some row counts, and a
# prompt row's result then depends on how many other rows share its step -- enough, after a bf16
# rounding of q and k, to flip a near-tie between two tokens (measured: SmolLM2's "What is the
# capital of France?" answered differently alone and beside five other prompts). The cost is about
# 20% of prompt GEMM time on two threads. A value the user set is kept.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

__version__ = "0.1.0"
__all__ = ["__version__"]
