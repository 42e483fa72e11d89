"""Talking to OpenAI-compatible completion servers: wire, pool, calls, model files."""

from accord.errors import NoHealthyUpstream

from ._calls import (
    DEFAULT_RETRY,
    RetryPolicy,
    WholeCompletion,
    post_completion,
    stream_completion,
    upstream_token_count,
)
from ._hub import ModelNotFound, ResolvedModel, SamplingDefaults, resolve_model, served_model_id
from ._model_files import ModelFiles, TextTokenizer, load_model_files
from ._pool import HttpSession, Upstream, UpstreamPool, base_url
from ._wire import CompletionBody, SSEDecoder, StreamReader, decode_body, failure_in_stream, failure_of

__all__ = [
    "DEFAULT_RETRY",
    "CompletionBody",
    "HttpSession",
    "ModelFiles",
    "ModelNotFound",
    "NoHealthyUpstream",
    "ResolvedModel",
    "RetryPolicy",
    "SSEDecoder",
    "SamplingDefaults",
    "StreamReader",
    "TextTokenizer",
    "Upstream",
    "UpstreamPool",
    "WholeCompletion",
    "base_url",
    "decode_body",
    "failure_in_stream",
    "failure_of",
    "load_model_files",
    "post_completion",
    "resolve_model",
    "served_model_id",
    "stream_completion",
    "upstream_token_count",
]
