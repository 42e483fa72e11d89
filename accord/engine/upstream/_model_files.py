"""What a remote engine reads from the model's own files: tokenizer and chat template.

The upstream holds the weights; accord still renders the prompt (the Responses
semantics live here) and, when it can, tokenises it, so the upstream receives the exact
token ids the template produced and prompt counts are known before the upstream answers.

A GGUF file carries both in its metadata: the template as ``tokenizer.chat_template``
and a byte-level BPE vocabulary (``tokenizer.ggml.model == "gpt2"``) that the
``tokenizers`` library rebuilds exactly once the pre-tokeniser of its ``pre`` type is
known. A Hugging Face directory ships ``tokenizer.json`` and its template in
``chat_template.jinja`` or ``tokenizer_config.json``.

Strategy for what we cannot rebuild faithfully (a SentencePiece GGUF, an unknown
pre-tokeniser): no tokenizer at all. The prompt then goes upstream as text and the
upstream tokenises it; a nearly-right tokenizer would silently change what the model
sees, which is worse than sending text.
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("accord.engine.remote")

#: GGUF token types (llama.cpp ``llama_token_type``) that are whole added tokens, not BPE pieces.
_CONTROL, _USER_DEFINED = 3, 4

_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: llama.cpp pre-tokeniser names -> (split regex or None for the GPT-2 default, digits one by one).
_PRE: dict[str, tuple[str | None, bool]] = {
    "default": (None, False),
    "gpt-2": (None, False),
    "gpt2": (None, False),
    "smollm": (None, True),
    "starcoder": (None, True),
    "refact": (None, True),
    "llama3": (_LLAMA3_SPLIT, False),
    "llama-bpe": (_LLAMA3_SPLIT, False),
    "smaug-bpe": (_LLAMA3_SPLIT, False),
    "qwen2": (_QWEN2_SPLIT, False),
}


class TextTokenizer:
    """Text <-> token ids for one model; special-token text in the prompt maps to its id."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        # The rendered template already spells out BOS and friends: add nothing.
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=False))

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


@dataclass(frozen=True)
class ModelFiles:
    tokenizer: TextTokenizer | None
    chat_template: str | None
    bos_token: str = ""
    eos_token: str = ""


def load_model_files(path: Path | str) -> ModelFiles:
    """Tokenizer and template from a GGUF file or a Hugging Face model directory."""
    path = Path(path)
    if path.is_dir():
        return _from_hf_dir(path)
    if path.suffix == ".gguf":
        return _from_gguf(path)
    raise ValueError(f"{path}: --model must be a GGUF file or a model directory")


def _from_hf_dir(directory: Path) -> ModelFiles:
    from tokenizers import Tokenizer

    tokenizer_path = directory / "tokenizer.json"
    tokenizer = TextTokenizer(Tokenizer.from_file(str(tokenizer_path))) if tokenizer_path.exists() else None
    config: dict[str, Any] = {}
    config_path = directory / "tokenizer_config.json"
    if config_path.exists():
        loaded = json.loads(config_path.read_text(encoding="utf-8"))
        config = loaded if isinstance(loaded, dict) else {}
    template: Any = config.get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    jinja_path = directory / "chat_template.jinja"
    if jinja_path.exists():
        template = jinja_path.read_text(encoding="utf-8")
    return ModelFiles(
        tokenizer=tokenizer,
        chat_template=template if isinstance(template, str) and template else None,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
    )


def _token_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


def _from_gguf(path: Path) -> ModelFiles:
    meta = read_gguf_metadata(path)
    tokens: list[str] = meta.get("tokenizer.ggml.tokens", [])

    def special(key: str) -> str:
        token_id = meta.get(key)
        return tokens[token_id] if isinstance(token_id, int) and 0 <= token_id < len(tokens) else ""

    model, pre = meta.get("tokenizer.ggml.model"), meta.get("tokenizer.ggml.pre") or "default"
    tokenizer = None
    if model == "gpt2" and pre in _PRE:
        tokenizer = _byte_level_bpe(
            tokens,
            meta.get("tokenizer.ggml.merges", []),
            meta.get("tokenizer.ggml.token_type", []),
            _PRE[pre],
        )
    else:
        log.warning("no tokenizer rebuilt from GGUF; prompts go upstream as text", model=model, pre=pre)
    template = meta.get("tokenizer.chat_template")
    return ModelFiles(
        tokenizer=tokenizer,
        chat_template=template if isinstance(template, str) else None,
        bos_token=special("tokenizer.ggml.bos_token_id"),
        eos_token=special("tokenizer.ggml.eos_token_id"),
    )


# GGUF value types -> struct format of one scalar (8: string, 9: array).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """The key/value header of a GGUF file (v2, v3), read without touching its tensors.

    The ``gguf`` package's reader builds a numpy view per array element -- seconds for a
    49k-token vocabulary -- when all a remote engine needs is the strings; this walks the
    header once with ``struct``.
    """
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version, _, kv_count = struct.unpack_from("<IQQ", data, 4)
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        pos = 24
        meta: dict[str, Any] = {}

        def string(at: int) -> tuple[str, int]:
            (size,) = struct.unpack_from("<Q", data, at)
            end = at + 8 + size
            return data[at + 8 : end].decode("utf-8", errors="replace"), end

        def value(kind: int, at: int) -> tuple[Any, int]:
            if kind == 8:
                return string(at)
            if kind == 9:
                item, count = struct.unpack_from("<IQ", data, at)
                at += 12
                if item in _SCALARS:
                    fmt = f"<{count}{_SCALARS[item]}"
                    return list(struct.unpack_from(fmt, data, at)), at + struct.calcsize(fmt)
                items = []
                for _ in range(count):
                    one, at = value(item, at)
                    items.append(one)
                return items, at
            fmt = "<" + _SCALARS[kind]
            return struct.unpack_from(fmt, data, at)[0], at + struct.calcsize(fmt)

        for _ in range(kv_count):
            key, pos = string(pos)
            (kind,) = struct.unpack_from("<I", data, pos)
            meta[key], pos = value(kind, pos + 4)
        return meta


def _byte_level_bpe(
    tokens: list[str], merges: list[str], types: list[int], pre: tuple[str | None, bool]
) -> TextTokenizer:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    split, single_digits = pre
    bpe = models.BPE(
        vocab={token: i for i, token in enumerate(tokens)},
        merges=[(a, b) for a, _, b in (m.partition(" ") for m in merges)],
    )
    tokenizer = Tokenizer(bpe)
    steps: list[Any] = []
    if single_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    if split is not None:
        steps.append(pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False))
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.ByteLevel()
    added = [
        AddedToken(tokens[i], special=kind == _CONTROL, normalized=False)
        for i, kind in enumerate(types)
        if kind in (_CONTROL, _USER_DEFINED)
    ]
    tokenizer.add_special_tokens([a for a in added if a.special])
    tokenizer.add_tokens([a for a in added if not a.special])
    return TextTokenizer(tokenizer)
