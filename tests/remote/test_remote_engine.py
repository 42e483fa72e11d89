"""The remote engine against fake vLLM upstreams: what it sends, routing, retries, failures, cancellation."""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from accord.engine import tokens
from accord.engine.protocol import GenerationRequest, OutputConstraint, Sampling
from accord.engine.remote import RemoteEngine
from accord.engine.upstream import HttpSession, ModelFiles, load_model_files
from accord.events.generation import Chunk
from tests.remote.conftest import Fleet, key_for
from tests.remote.harness import Outcome, collect, wait_until

REPLY = "Hello from the upstream, how are you?"


def _engine(urls: list[str], **kwargs: object) -> RemoteEngine:
    engine = RemoteEngine(urls, **kwargs)  # type: ignore[arg-type]
    engine.pool.backoff = (0.05, 0.2)
    return engine


def _generate(backend: str, engine: RemoteEngine, request: GenerationRequest) -> Outcome:
    async def main() -> Outcome:
        try:
            return await collect(engine, request)
        finally:
            await engine.aclose()

    result: Outcome = anyio.run(main, backend=backend)
    return result


def test_prompt_goes_upstream_as_the_models_token_ids(
    fleet: Fleet, smollm2_files: ModelFiles, backend: str
) -> None:
    """With the model's tokenizer the upstream runs exactly the template's tokens, and the budget
    fills the upstream's context (vLLM's completions default would stop at 16 tokens)."""
    engine = _engine(fleet.urls[:1], files=smollm2_files)
    prompt = "<|im_start|>user\nHi there 123<|im_end|>\n<|im_start|>assistant\n"
    request = GenerationRequest(
        prompt=prompt,
        request_id="resp_abc",
        sampling=Sampling(temperature=0.0, seed=7),
        stop=("<|im_end|>",),
    )
    out = _generate(backend, engine, request)
    assert smollm2_files.tokenizer is not None
    ids = smollm2_files.tokenizer.encode(prompt)
    assert ids[0] == 1 and ids[-1] == 198  # <|im_start|> and the newline: special tokens kept whole
    seen = fleet.fakes[0].seen[-1]
    body = seen.body
    assert body["prompt"] == ids and body["model"] == "fake-model"
    assert body["max_tokens"] == 4096 - len(ids)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["return_token_ids"] is True and body["skip_special_tokens"] is False
    assert body["spaces_between_special_tokens"] is False
    assert (body["temperature"], body["seed"]) == (0.0, 7)
    assert body["stop_token_ids"] == smollm2_files.tokenizer.encode("<|im_end|>") and "stop" not in body
    assert seen.headers["x-request-id"] == "resp_abc"
    assert out.text == REPLY and out.finished is not None
    assert out.finished.prompt_tokens == len(ids) and out.finished.output_tokens == len(out.token_ids) > 0


def test_without_a_tokenizer_the_prompt_goes_as_text_with_no_extra_bos(fleet: Fleet) -> None:
    engine = _engine(fleet.urls[:1])
    out = _generate("asyncio", engine, GenerationRequest(prompt="plain prompt", max_tokens=3))
    body = fleet.fakes[0].seen[-1].body
    assert body["prompt"] == "plain prompt" and body["add_special_tokens"] is False
    assert body["max_tokens"] == 3
    assert out.finished is not None and out.finished.reason == "length" and out.text == "Hello from"


def test_a_conversation_returns_to_its_upstream_and_hits_its_prefix_cache(fleet: Fleet) -> None:
    """Affinity by prompt_cache_key: every turn on one upstream, so the second turn is cached."""
    engine = _engine(fleet.urls)

    async def main() -> list[Outcome]:
        turns, prompt = [], "system: be brief. user: first question here"
        for n in range(4):
            turns.append(await collect(engine, GenerationRequest(prompt=prompt, cache_key="thread-42")))
            prompt += f" assistant: {REPLY} user: follow-up number {n}"
        await engine.aclose()
        return turns

    turns = anyio.run(main)
    served = [len(f.seen) for f in fleet.fakes]
    assert sorted(served) == [0, 0, 4]
    assert turns[0].finished is not None and turns[0].finished.cached_tokens == 0
    assert all(t.finished is not None and t.finished.cached_tokens > 0 for t in turns[1:])


def test_requests_without_a_key_go_to_the_least_loaded_upstream(fleet: Fleet, backend: str) -> None:
    for fake in fleet.fakes:
        fake.behaviour.token_delay = 0.02
    engine = _engine(fleet.urls)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(9):
                tg.start_soon(collect, engine, GenerationRequest(prompt=f"question {n}"))
        await engine.aclose()

    anyio.run(main, backend=backend)
    assert [len(f.seen) for f in fleet.fakes] == [3, 3, 3]


def test_a_5xx_before_the_first_byte_is_retried_on_another_upstream(fleet: Fleet) -> None:
    engine = _engine(fleet.urls[:2])
    key = key_for(engine.pool, fleet.urls[0])
    fleet.fakes[0].behaviour.fail_next = [503]
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi", cache_key=key))
    assert out.text == REPLY and out.finished is not None
    assert [len(f.seen) for f in fleet.fakes[:2]] == [1, 1]
    assert engine.pool.upstreams[0].state == "down"


def test_a_refused_connection_fails_over_and_the_upstream_is_taken_back_when_it_returns(
    fleet: Fleet, backend: str
) -> None:
    engine = _engine(fleet.urls[:2])
    key = key_for(engine.pool, fleet.urls[0])
    fleet.served[0].stop()

    async def main() -> tuple[Outcome, Outcome]:
        first = await collect(engine, GenerationRequest(prompt="hi", cache_key=key))
        await anyio.to_thread.run_sync(fleet.served[0].start)
        await anyio.sleep(0.25)  # past the backoff: the next choice probes it
        second = await collect(engine, GenerationRequest(prompt="hi again", cache_key=key))
        await engine.aclose()
        return first, second

    first, second = anyio.run(main, backend=backend)
    assert first.text == second.text == REPLY
    assert len(fleet.fakes[1].seen) == 1 and len(fleet.fakes[0].seen) == 1
    assert fleet.fakes[0].seen[0].body["prompt"] == "hi again"
    assert engine.pool.upstreams[0].state == "up"


def test_a_failure_after_the_first_byte_is_not_retried(fleet: Fleet) -> None:
    """Output already read can't be replayed: the generation ends as an upstream failure."""
    engine = _engine(fleet.urls[:2])
    key = key_for(engine.pool, fleet.urls[0])
    fleet.fakes[0].behaviour.drop_after = 3
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi", cache_key=key))
    assert out.text == "Hello from"
    assert out.failed is not None and out.failed.failure == "upstream_error"
    assert [len(f.seen) for f in fleet.fakes[:2]] == [1, 0]


def test_an_error_event_mid_stream_ends_the_generation(fleet: Fleet) -> None:
    engine = _engine(fleet.urls[:1])
    fleet.fakes[0].behaviour.error_after = 2
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi"))
    assert out.text == "Hello "
    assert out.failed is not None and out.failed.failure == "upstream_error"


def test_an_over_length_prompt_is_context_length_exceeded_with_the_upstreams_words(fleet: Fleet) -> None:
    """A 4xx is the request's fault: no retry, and the upstream's message reaches the client."""
    engine = _engine(fleet.urls[:2])
    for fake in fleet.fakes:
        fake.behaviour.max_model_len = 5
    out = _generate("asyncio", engine, GenerationRequest(prompt="a prompt that is far too long for it"))
    assert out.failed is not None and out.failed.failure == "context_length_exceeded"
    assert "maximum model length of 5" in out.failed.message
    assert out.failed.prompt_tokens == 0 or out.failed.prompt_tokens > 5
    assert sum(len(f.seen) for f in fleet.fakes[:2]) == 1


def test_other_4xx_answers_are_engine_errors_carrying_the_message(fleet: Fleet) -> None:
    engine = _engine(fleet.urls[:2])
    key = key_for(engine.pool, fleet.urls[0])
    fleet.fakes[0].behaviour.fail_next = [404]
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi", cache_key=key))
    assert out.failed is not None and (out.failed.failure, out.failed.message) == (
        "engine_error",
        "fake failure 404",
    )
    assert [len(f.seen) for f in fleet.fakes[:2]] == [1, 0]


def test_the_local_context_limit_rejects_before_any_upstream_is_asked(
    fleet: Fleet, smollm2_files: ModelFiles
) -> None:
    engine = _engine(fleet.urls[:1], files=smollm2_files, max_context=4)
    out = _generate("asyncio", engine, GenerationRequest(prompt="one two three four five six"))
    assert out.failed is not None and out.failed.failure == "context_length_exceeded"
    assert "maximum context length is 4 tokens" in out.failed.message
    assert fleet.fakes[0].seen == []


def test_with_every_upstream_down_the_generation_fails_as_upstream_error(fleet: Fleet) -> None:
    for served in fleet.served[:2]:
        served.stop()
    engine = _engine(fleet.urls[:2])
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi"))
    assert out.failed is not None and out.failed.failure == "upstream_error"


def test_closing_the_generation_cancels_the_upstream_request(fleet: Fleet, backend: str) -> None:
    """The client went away: the upstream must see its connection close and stop generating."""
    fleet.fakes[0].behaviour.token_delay = 0.05
    engine = _engine(fleet.urls[:1])

    async def main() -> int:
        got = 0
        async with aclosing(engine.generate(GenerationRequest(prompt="hi"))) as events:
            async for event in events:
                got += isinstance(event, Chunk)
                if got == 2:
                    break
        return got

    assert anyio.run(main, backend=backend) == 2
    assert wait_until(lambda: bool(fleet.fakes[0].seen) and fleet.fakes[0].seen[-1].disconnected, 3.0)
    assert fleet.fakes[0].seen[-1].tokens_sent < len(REPLY.split())


@pytest.mark.parametrize("text", ["short", "x" * 20_000])
def test_token_counts_use_the_models_tokenizer(smollm2_files: ModelFiles, text: str) -> None:
    engine = _engine(["http://127.0.0.1:9"], files=smollm2_files)
    assert smollm2_files.tokenizer is not None
    assert anyio.run(engine.count_tokens, text) == len(smollm2_files.tokenizer.encode(text))


def test_a_read_timeout_ends_the_generation_without_a_retry(fleet: Fleet) -> None:
    """The upstream may still be prefilling: a retry elsewhere would start the work over."""
    for fake in fleet.fakes[:2]:
        fake.behaviour.first_token_delay = 1.0
    engine = RemoteEngine(fleet.urls[:2], http=HttpSession(read_timeout=0.2))
    out = _generate("asyncio", engine, GenerationRequest(prompt="hi"))
    assert out.failed is not None and out.failed.failure == "upstream_error"
    assert "timed out" in out.failed.message
    assert sum(len(f.seen) for f in fleet.fakes[:2]) == 1


def test_a_hugging_face_directory_gives_the_same_tokens_and_template(
    fleet: Fleet, smollm2_files: ModelFiles, tmp_path: Path
) -> None:
    assert smollm2_files.tokenizer is not None and smollm2_files.chat_template is not None
    smollm2_files.tokenizer._tokenizer.save(str(tmp_path / "tokenizer.json"))
    config = {
        "chat_template": smollm2_files.chat_template,
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    files = load_model_files(tmp_path)
    assert files.chat_template == smollm2_files.chat_template
    assert (files.bos_token, files.eos_token) == (smollm2_files.bos_token, smollm2_files.eos_token)
    text = "<|im_start|>user\nDéjà vu 42<|im_end|>\n"
    assert files.tokenizer is not None and files.tokenizer.encode(text) == smollm2_files.tokenizer.encode(
        text
    )
    engine = _engine(fleet.urls[:1], files=files)
    assert engine.chat_template == files.chat_template
    _generate("asyncio", engine, GenerationRequest(prompt=text))
    assert fleet.fakes[0].seen[-1].body["prompt"] == files.tokenizer.encode(text)


def test_sequential_requests_reuse_one_upstream_connection(fleet: Fleet) -> None:
    """Each stream is read to its end, so its connection goes back to the pool for the next one."""
    engine = RemoteEngine(fleet.urls[:1], http=HttpSession(shards=1))

    async def main() -> None:
        for n in range(5):
            await collect(engine, GenerationRequest(prompt=f"question {n}"))
        await engine.aclose()

    anyio.run(main)
    assert len(fleet.fakes[0].seen) == 5
    assert len({s.peer for s in fleet.fakes[0].seen}) == 1


def test_without_a_tokenizer_prompts_are_counted_by_the_upstream(fleet: Fleet) -> None:
    """``/v1/responses/input_tokens`` must be exact: vLLM and SGLang answer ``/tokenize``."""
    engine = _engine(fleet.urls[:1])

    async def main() -> int:
        try:
            return await engine.count_tokens("count me, exactly: 1 2 3")
        finally:
            await engine.aclose()

    assert anyio.run(main) == len(tokens.token_ids("count me, exactly: 1 2 3"))


def test_a_json_schema_goes_upstream_as_response_format(fleet: Fleet) -> None:
    """The OpenAI-compatible form vLLM, SGLang and llama-server take; a free request sends none."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    constraint = OutputConstraint(json_schema=json.dumps(schema), name="thing")
    engine = _engine(fleet.urls[:1])
    assert engine.capabilities.json_schema and not engine.capabilities.tool_calls
    _generate("asyncio", engine, GenerationRequest(prompt="p", max_tokens=2, constraint=constraint))
    body = fleet.fakes[0].seen[-1].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "thing", "schema": schema},
    }
    _generate("asyncio", _engine(fleet.urls[:1]), GenerationRequest(prompt="p", max_tokens=2))
    assert "response_format" not in fleet.fakes[0].seen[-1].body


def test_a_stop_that_is_a_special_token_goes_upstream_as_its_id(smollm2_files: ModelFiles) -> None:
    """vLLM and SGLang stop on ``stop_token_ids``: the id, which the model writes only to mean it,
    not the text, which a value quoting the format contains too. Other stops stay text."""
    assert smollm2_files.tokenizer is not None
    engine = _engine(["http://127.0.0.1:9"], files=smollm2_files)
    special = smollm2_files.tokenizer.encode("<|im_start|>")
    assert len(special) == 1
    body = engine.body(GenerationRequest(prompt="p", stop=("<|im_start|>", "END")), [1])
    assert body["stop"] == ["END"] and body["stop_token_ids"] == special
    # Without the model's tokenizer nothing is known to be a special token: all of it is text.
    plain = _engine(["http://127.0.0.1:9"]).body(GenerationRequest(prompt="p", stop=("<|im_start|>",)), "p")
    assert plain["stop"] == ["<|im_start|>"] and "stop_token_ids" not in plain


def test_the_stop_string_the_upstream_matched_ends_the_generation(fleet: Fleet, backend: str) -> None:
    """vLLM cuts the text before the stop string and names it (``stop_reason``): the generation ends
    with that stop sequence, which Messages reports as ``stop_sequence``."""
    engine = _engine(fleet.urls[:1])
    request = GenerationRequest(prompt="Hi", request_id="resp_stop", stop=("how", "never"))
    out = _generate(backend, engine, request)
    assert out.text == "Hello from the upstream, "
    assert out.finished is not None and out.finished.reason == "stop"
    assert out.finished.stop_sequence == "how"
    assert fleet.fakes[0].seen[-1].body["stop"] == ["how", "never"]
