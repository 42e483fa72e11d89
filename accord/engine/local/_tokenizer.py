"""Byte-level BPE tokenizer built from a GGUF vocabulary, and UTF-8-safe incremental detokenisation.

Encoding runs on the ``tokenizers`` package, assembled by :func:`accord.engine.bpe.build_bpe` (the
builder the remote engine uses too) from the vocabulary and merges stored in the file; added tokens written in the text (``<|im_start|>`` in a rendered chat template) become their ids.
Decoding is done here from a table of each token's bytes, because output arrives one token at a time
and a character may be split across tokens: the incremental UTF-8 decoder holds a partial character back
until its last byte arrives, so no chunk ever carries half of one.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable

from accord.engine.bpe import CONTROL, USER_DEFINED, build_bpe
from accord.engine.model_files import TokenizerData

# Texts of control tokens that end a turn in the chat formats of Llama-family fine-tunes.
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>")


def _byte_decoder() -> dict[str, int]:
    """GPT-2's reversible byte <-> printable character map, inverted."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    codes = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes, strict=True)}


class Tokenizer:
    """Text <-> token ids for one model."""

    def __init__(self, data: TokenizerData) -> None:
        self.tokens = data.tokens
        backend = build_bpe(data)
        # Added tokens (control and user-defined) are stored as their text, not byte-level encoded.
        special = [i for i, t in enumerate(data.token_types) if t in (CONTROL, USER_DEFINED)]
        self._backend = backend
        self.special_ids = frozenset(special)
        table = _byte_decoder()
        self._bytes: list[bytes] = [
            text.encode() if i in self.special_ids else bytes(table.get(ch, 0x3F) for ch in text)
            for i, text in enumerate(data.tokens)
        ]
        self.bos_id = data.bos_id
        self.eos_id = data.eos_id
        ends = {i for i in (data.eos_id, data.eot_id) if i is not None}
        ends |= {i for i in special if data.tokens[i] in _END_OF_TURN}
        #: Token ids that end generation (finish reason "stop"); their text is never emitted.
        self.stop_ids = frozenset(ends)
        self._special_by_text = {data.tokens[i]: i for i in special}

    def special_id(self, text: str) -> int | None:
        """The id of the special token spelled ``text``, if the vocabulary has one."""
        return self._special_by_text.get(text)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; special-token texts become their ids, no BOS is added."""
        return list(self._backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self._bytes[i] for i in ids).decode("utf-8", errors="replace")

    def token_bytes(self, token_id: int) -> bytes:
        return self._bytes[token_id]

    def token_text(self, token_id: int | None) -> str | None:
        return None if token_id is None else self.tokens[token_id]

    def detokenizer(self) -> Detokenizer:
        return Detokenizer(self._bytes)


class Detokenizer:
    """Turns a stream of token ids into text, never splitting a UTF-8 character."""

    def __init__(self, table: list[bytes]) -> None:
        self._table = table
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token_id: int) -> str:
        return str(self._utf8.decode(self._table[token_id]))

    def flush(self) -> str:
        """What is still held back at the end (a truncated character becomes U+FFFD)."""
        return str(self._utf8.decode(b"", final=True))
