"""accord: an OpenAI Responses API server for open-weight models."""

__version__ = "0.1.0"
__all__ = ["__version__"]
