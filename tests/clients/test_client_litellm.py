"""LiteLLM's Responses API bridge (``litellm.responses``) against accord as an OpenAI provider."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import pytest

# LiteLLM fetches its model price list from the network at import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from tests.clients import responses_scenarios as scenarios
from tests.clients.matrix import KEEPALIVE_TEXT, PLAIN_TEXT
from tests.clients.responses_scenarios import text_of
from tests.serving import Server

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")]


def respond(server: Server, streamed: bool, **body: Any) -> tuple[Any, list[str]]:
    """The final response and the event types LiteLLM passed on (none when not streamed)."""
    common: dict[str, Any] = {"model": "openai/scripted", "api_base": server.v1, "api_key": "unused"}
    if not streamed:
        return litellm.responses(**common, **body), []
    kinds: list[str] = []
    final = None
    for event in litellm.responses(**common, **body, stream=True):
        kinds.append(str(getattr(event.type, "value", event.type)))  # LiteLLM types them as an enum
        if event.type == "response.completed":
            final = event.response
    assert final is not None, kinds
    return final, kinds


@pytest.mark.parametrize("streamed", [False, True])
def test_plain(server: Server, streamed: bool) -> None:
    response, _ = respond(server, streamed, input="hi")
    assert text_of(response) == PLAIN_TEXT


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_loop(server: Server, streamed: bool) -> None:
    scenarios.tool_loop(partial(respond, server), streamed)


@pytest.mark.parametrize("streamed", [False, True])
def test_keepalive_mid_stream(server: Server, streamed: bool) -> None:
    before = server.app.metrics.keepalives
    response, kinds = respond(server, streamed, input="keepalive please")
    assert text_of(response) == KEEPALIVE_TEXT
    if streamed:
        # accord sent keepalives between the deltas; LiteLLM's stream iterator passes on only the
        # first in_progress and renumbers what it yields, so they are counted at the server.
        assert server.app.metrics.keepalives > before
        assert kinds.count("response.output_text.delta") == 4


@pytest.mark.parametrize("streamed", [False, True])
def test_structured_output(server: Server, streamed: bool) -> None:
    scenarios.structured_output(partial(respond, server), streamed)


@pytest.mark.parametrize("streamed", [False, True])
def test_continuation(server: Server, streamed: bool) -> None:
    scenarios.continuation(partial(respond, server), streamed)


@pytest.mark.parametrize("streamed", [False, True])
def test_reasoning_summary(server: Server, streamed: bool) -> None:
    scenarios.reasoning_summary(partial(respond, server), streamed)
