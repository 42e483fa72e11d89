"""Reading upstream answers, sans-IO: SSE framing, chunk -> engine events, error -> failure kind."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accord.engine import tokens
from accord.engine.upstream import SSEDecoder, StreamReader, failure_of
from accord.events.generation import Chunk, EngineFailed, Finished

BODY = (
    b'data: {"choices":[{"text":"Hel","token_ids":[1,2]}]}\n\n'
    b": a comment\r\n"
    b'data: {"choices":[{"text":"","token_ids":[3]}]}\r\n\r\n'
    b'data: {"choices":[{"text":"lo","token_ids":[4],"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4,'
    b'"prompt_tokens_details":{"cached_tokens":4}}}\n\n'
    b"data: [DONE]\n\n"
)


def _payloads(parts: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    out = [p for part in parts for p in decoder.feed(part)]
    return out + decoder.finish()


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_sse_payloads_do_not_depend_on_where_the_body_is_split(cuts: list[int]) -> None:
    """TCP splits bytes anywhere, CRLF included; the payloads must come out the same."""
    points = sorted({0, len(BODY), *cuts})
    parts = [BODY[a:b] for a, b in itertools.pairwise(points)]
    assert _payloads(parts) == _payloads([BODY])
    assert len(_payloads([BODY])) == 5


def test_a_last_event_without_its_blank_line_is_not_lost() -> None:
    assert _payloads([b'data: {"a":1}\n\ndata: [DONE]']) == [b'{"a":1}', b"[DONE]"]


def _read(payloads: list[bytes], **kwargs: object) -> list[object]:
    reader = StreamReader(count=tokens.count, **kwargs)  # type: ignore[arg-type]
    out: list[object] = []
    for p in payloads:
        out.extend(reader.feed(p))
    return out + reader.finish()


def test_reader_passes_token_ids_and_usage_through() -> None:
    """Ids of a text-less chunk (a partial character) go with the next text; usage is the upstream's."""
    events = _read(_payloads([BODY]))
    assert events == [
        Chunk(text="Hel", token_ids=(1, 2)),
        Chunk(text="lo", token_ids=(3, 4)),
        Finished(reason="stop", prompt_tokens=7, cached_tokens=4, output_tokens=4),
    ]


def test_reader_counts_text_when_the_upstream_reports_no_tokens() -> None:
    """llama.cpp-style: no ids, no usage -> the text is measured, the prompt size is ours."""
    payloads = [
        json.dumps({"choices": [{"text": "one two", "finish_reason": None}]}).encode(),
        json.dumps(
            {"choices": [{"text": "", "finish_reason": "length"}], "timings": {"cache_n": 3}}
        ).encode(),
        b"[DONE]",
    ]
    events = _read(payloads, prompt_tokens=11)
    assert events[-1] == Finished(reason="length", prompt_tokens=11, cached_tokens=3, output_tokens=3)


@pytest.mark.parametrize("field", ["stop_reason", "matched_stop"])
def test_the_matched_stop_string_is_reported_where_the_upstream_names_it(field: str) -> None:
    """vLLM (``stop_reason``) and SGLang (``matched_stop``) name the stop string that matched; only
    the request's own stops count (a profile's end token is not the client's stop sequence)."""

    def ended_by(matched: object, stops: tuple[str, ...]) -> Finished:
        final = {"choices": [{"text": "", "finish_reason": "stop", field: matched}]}
        payloads = [
            json.dumps({"choices": [{"text": "one"}]}).encode(),
            json.dumps(final).encode(),
            b"[DONE]",
        ]
        last = _read(payloads, prompt_tokens=2, stops=stops)[-1]
        assert isinstance(last, Finished)
        return last

    assert ended_by("END", ("END", "STOP")).stop_sequence == "END"
    assert ended_by("<|im_end|>", ("END",)).stop_sequence is None
    assert ended_by(2, ("END",)).stop_sequence is None  # a stop token's id
    assert ended_by(None, ("END",)).stop_sequence is None


@pytest.mark.parametrize("field", ["stop_reason", "matched_stop"])
def test_a_stop_sent_as_a_token_id_is_reported_by_its_text(field: str) -> None:
    """A request stop sent as ``stop_token_ids`` comes back as the id the upstream stopped at."""
    final = {"choices": [{"text": "", "finish_reason": "stop", field: 200012}]}
    payloads = [json.dumps({"choices": [{"text": "one"}]}).encode(), json.dumps(final).encode(), b"[DONE]"]
    last = _read(payloads, prompt_tokens=2, stops=("<|call|>",), stop_tokens={200012: "<|call|>"})[-1]
    assert isinstance(last, Finished) and last.stop_sequence == "<|call|>"
    other = {"choices": [{"text": "", "finish_reason": "stop", field: 200002}]}
    payloads[1] = json.dumps(other).encode()
    last = _read(payloads, prompt_tokens=2, stops=("<|call|>",), stop_tokens={200012: "<|call|>"})[-1]
    assert isinstance(last, Finished) and last.stop_sequence is None  # the model's own end token


def test_reader_can_ignore_the_upstream_cached_count() -> None:
    """A decode worker reports the transferred prompt as cached; the context phase's count wins."""
    events = _read(_payloads([BODY]), cached_tokens=1, trust_cached=False)
    assert events[-1] == Finished(reason="stop", prompt_tokens=7, cached_tokens=1, output_tokens=4)


def test_a_stream_cut_before_its_finish_is_an_upstream_failure() -> None:
    events = _read([b'{"choices":[{"text":"par"}]}'], prompt_tokens=5)
    assert events[-1] == EngineFailed(
        failure="upstream_error", message="upstream stream ended before it finished", prompt_tokens=5
    )


@pytest.mark.parametrize(
    ("event", "failure"),
    [
        (
            {"error": {"message": "EngineCore died", "type": "InternalServerError", "code": 500}},
            "upstream_error",
        ),
        (
            {"object": "error", "message": "bad sampling", "type": "BadRequestError", "code": 400},
            "engine_error",
        ),
        ({"error": {"message": "x", "type": "server_error", "code": "upstream_error"}}, "upstream_error"),
        ({"error": {"message": "too long", "code": "context_length_exceeded"}}, "context_length_exceeded"),
    ],
)
def test_an_error_event_in_the_stream_ends_it_with_its_kind(event: dict[str, object], failure: str) -> None:
    events = _read([b'{"choices":[{"text":"a"}]}', json.dumps(event).encode(), b"[DONE]"])
    assert isinstance(events[-1], EngineFailed) and events[-1].failure == failure
    assert [type(e) for e in events] == [Chunk, EngineFailed]


def test_abort_as_finish_reason_is_a_failure_not_a_short_answer() -> None:
    events = _read([b'{"choices":[{"text":"a","finish_reason":"abort"}]}', b"[DONE]"])
    assert isinstance(events[-1], EngineFailed) and events[-1].failure == "upstream_error"


VLLM_OLD = (
    "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
    "(8990 in the messages, 10 in the completion). Please reduce the length of the messages or completion."
)
VLLM_NEW = (
    "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens."
)
SGLANG = "The input (9000 tokens) is longer than the model's context length (8192 tokens)."


@pytest.mark.parametrize(
    ("status", "body", "failure", "message"),
    [
        (
            400,
            {"error": {"message": VLLM_NEW, "type": "BadRequestError", "code": 400}},
            "context_length_exceeded",
            VLLM_NEW,
        ),
        (
            400,
            {"object": "error", "message": VLLM_OLD, "type": "BadRequestError", "code": 400},
            "context_length_exceeded",
            VLLM_OLD,
        ),
        (400, {"error": {"message": SGLANG, "code": 400}}, "context_length_exceeded", SGLANG),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size",
                    "type": "exceed_context_size_error",
                }
            },
            "context_length_exceeded",
            "the request exceeds the available context size",
        ),
        (
            400,
            {"error": {"message": "no", "code": "context_length_exceeded"}},
            "context_length_exceeded",
            "no",
        ),
        (
            404,
            {"error": {"message": "The model `x` does not exist.", "code": 404}},
            "engine_error",
            "The model `x` does not exist.",
        ),
        (422, {"detail": "bad"}, "engine_error", '{"detail": "bad"}'),
        (
            500,
            {"error": {"message": "context length secret", "code": 500}},
            "upstream_error",
            "upstream answered HTTP 500",
        ),
        (429, {"error": {"message": "slow down"}}, "upstream_error", "upstream answered HTTP 429"),
    ],
)
def test_upstream_errors_map_to_typed_failures(status: int, body: object, failure: str, message: str) -> None:
    """Over-length is recognised in every engine's words; 4xx keeps its message; 5xx shows none."""
    result = failure_of(status, json.dumps(body).encode())
    assert (result.failure, result.message) == (failure, message)
