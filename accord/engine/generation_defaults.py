"""Sampling defaults for a model: its file's own generation settings, else its family's recommended values.

A request's own values always win; these fill only what the request leaves unset. GGUF files written by
recent converters carry ``general.sampling.*`` (taken from the checkpoint's ``generation_config.json``);
older ones do not, and then the family's published recommendation is used. Where neither exists the
OpenAI defaults stand (temperature 1.0, top_p 1.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GenerationDefaults:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    #: Where the values came from: "model file", "family <name>", or "OpenAI defaults".
    source: str = "OpenAI defaults"


# Recommended values by ``general.basename`` (lower case), from each family's model card or the
# ``generation_config.json`` of its instruct checkpoints.
_FAMILIES: dict[str, GenerationDefaults] = {
    # SmolLM2 model cards: ``model.generate(..., temperature=0.2, top_p=0.9, do_sample=True)``.
    "smollm2": GenerationDefaults(0.2, 0.9, 0, "family smollm2"),
    "smollm": GenerationDefaults(0.2, 0.9, 0, "family smollm"),
    # Llama 3.x Instruct generation_config.json.
    "llama-3": GenerationDefaults(0.6, 0.9, 0, "family llama-3"),
    "meta-llama-3": GenerationDefaults(0.6, 0.9, 0, "family llama-3"),
    # Qwen2.5 Instruct generation_config.json.
    "qwen2.5": GenerationDefaults(0.7, 0.8, 20, "family qwen2.5"),
}


def generation_defaults(meta: dict[str, Any]) -> GenerationDefaults:
    """The defaults for the model whose GGUF header is ``meta``."""
    temp, top_p, top_k = (meta.get(f"general.sampling.{k}") for k in ("temp", "top_p", "top_k"))
    if any(isinstance(v, int | float) for v in (temp, top_p, top_k)):
        return GenerationDefaults(
            temperature=float(temp) if isinstance(temp, int | float) else 1.0,
            top_p=float(top_p) if isinstance(top_p, int | float) else 1.0,
            top_k=int(top_k) if isinstance(top_k, int | float) else 0,
            source="model file",
        )
    basename = str(meta.get("general.basename") or "").lower()
    return _FAMILIES.get(basename, GenerationDefaults())
