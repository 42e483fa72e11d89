"""Where tokens come from, behind one async protocol (SPEC E1)."""

from accord.engine.protocol import Engine, GenerationRequest, RequestHints, Sampling

__all__ = ["Engine", "GenerationRequest", "RequestHints", "Sampling"]
