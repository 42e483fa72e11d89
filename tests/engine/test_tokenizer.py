"""The GGUF tokenizer: special tokens, SmolLM2's digit splitting, and UTF-8-safe streaming."""

from __future__ import annotations

import pytest

from accord.engine.local import LocalEngine, Tokenizer

pytestmark = pytest.mark.model

TEXT = "Grüße aus Köln! 東京タワー 🙂🎉 naïve café — 12345 \u0301e"


@pytest.fixture(scope="module")
def tokenizer(engine: LocalEngine) -> Tokenizer:
    return engine.tokenizer


def test_round_trip_and_special_tokens(tokenizer: Tokenizer) -> None:
    ids = tokenizer.encode("<|im_start|>user\n" + TEXT + "<|im_end|>")
    assert ids[0] == tokenizer.encode("<|im_start|>")[0] == 1
    assert ids[-1] == tokenizer.eos_id == 2
    assert tokenizer.decode(ids) == "<|im_start|>user\n" + TEXT + "<|im_end|>"


def test_digits_are_split_one_by_one(tokenizer: Tokenizer) -> None:
    assert len(tokenizer.encode("12345")) == 5


def test_the_template_layer_sees_the_gguf_metadata(engine: LocalEngine) -> None:
    assert engine.model_name == "SmolLM2-135M-Instruct"
    assert engine.context_length == 8192
    assert (engine.bos_token, engine.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert "<|im_start|>" in engine.special_tokens
    assert engine.chat_template is not None and "<|im_start|>" in engine.chat_template


def whole_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_streamed_detokenisation_never_splits_a_character(tokenizer: Tokenizer) -> None:
    """Multi-byte characters spread over several byte-level tokens arrive whole or not at all."""
    ids = tokenizer.encode(TEXT)
    assert not all(whole_utf8(tokenizer.token_bytes(i)) for i in ids)  # some characters are split
    detok = tokenizer.detokenizer()
    pieces = [detok.feed(i) for i in ids] + [detok.flush()]
    assert all("\ufffd" not in p for p in pieces)
    assert "".join(pieces) == TEXT


def test_a_truncated_character_becomes_one_replacement_at_the_end(tokenizer: Tokenizer) -> None:
    ids = tokenizer.encode("🙂")
    assert len(ids) > 1
    detok = tokenizer.detokenizer()
    assert "".join(detok.feed(i) for i in ids[:-1]) == ""
    assert detok.flush() == "\ufffd"
