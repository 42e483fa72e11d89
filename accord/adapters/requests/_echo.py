"""The request fields a Response object repeats, with OpenAI's defaults filled in.

The SDK's ``Response`` model requires ``tools``, ``tool_choice`` and
``parallel_tool_calls``; clients also read ``text``, ``reasoning`` and ``metadata``
without checking for null, so each gets the value OpenAI would have sent.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._wire import AdditionalTools, ResponsesRequest


def _tools_as_sent(req: ResponsesRequest) -> list[dict[str, Any]]:
    tools = list(req.tools or [])
    # Hoisted tools (SPEC I6) are on offer too, so the echo lists them.
    if isinstance(req.input, list):
        for item in req.input:
            if isinstance(item, AdditionalTools):
                tools.extend(item.tools)
    return [msgspec.to_builtins(tool) for tool in tools]


def response_echo(req: ResponsesRequest) -> dict[str, Any]:
    """The request-derived fields of the Response object for ``req``."""
    text: dict[str, Any] = {"format": {"type": "text"}, "verbosity": "medium"}
    if req.text is not None:
        if req.text.format is not None:
            text["format"] = msgspec.to_builtins(req.text.format)
        if req.text.verbosity is not None:
            text["verbosity"] = req.text.verbosity
    reasoning: dict[str, Any] = {"effort": None, "summary": None}
    if req.reasoning is not None:
        reasoning = {
            "effort": req.reasoning.effort,
            "summary": req.reasoning.summary or req.reasoning.generate_summary,
        }
    tool_choice: Any = "auto" if req.tool_choice is None else msgspec.to_builtins(req.tool_choice)
    return {
        "instructions": req.instructions,
        "tools": _tools_as_sent(req),
        "tool_choice": tool_choice,
        "parallel_tool_calls": True if req.parallel_tool_calls is None else req.parallel_tool_calls,
        "temperature": 1.0 if req.temperature is None else req.temperature,
        "top_p": 1.0 if req.top_p is None else req.top_p,
        # Not request fields here; required in the Response by Open Responses, at OpenAI's defaults.
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_output_tokens": req.max_output_tokens,
        "max_tool_calls": req.max_tool_calls,
        "metadata": dict(req.metadata or {}),
        "previous_response_id": req.previous_response_id,
        "store": True if req.store is None else req.store,
        "text": text,
        "reasoning": reasoning,
        "truncation": req.truncation or "disabled",
        "user": req.user,
        "prompt_cache_key": req.prompt_cache_key,
        "background": bool(req.background),
        "service_tier": req.service_tier or "default",
        "top_logprobs": 0 if req.top_logprobs is None else req.top_logprobs,
        "safety_identifier": req.safety_identifier,
    }
