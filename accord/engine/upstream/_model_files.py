"""What a remote engine reads from the model's own files: tokenizer and chat template.

The upstream holds the weights; accord still renders the prompt (the Responses
semantics live here) and, when it can, tokenises it, so the upstream receives the exact
token ids the template produced and prompt counts are known before the upstream answers.

A GGUF file carries both in its metadata: the template as ``tokenizer.chat_template``
and a byte-level BPE vocabulary, read and rebuilt by the modules the embedded engine
uses too (:mod:`accord.engine.model_files`, :mod:`accord.engine.bpe`). A Hugging Face directory ships ``tokenizer.json`` and its template in
``chat_template.jinja`` or ``tokenizer_config.json``.

Strategy for what we cannot rebuild faithfully (a SentencePiece GGUF, an unknown
pre-tokeniser): no tokenizer at all. The prompt then goes upstream as text and the
upstream tokenises it; a nearly-right tokenizer would silently change what the model
sees, which is worse than sending text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from accord.engine.bpe import build_bpe
from accord.engine.model_files import UnsupportedModel, read_gguf_metadata, tokenizer_data

__all__ = ["ModelFiles", "TextTokenizer", "load_model_files", "read_gguf_metadata"]

log = structlog.get_logger("accord.engine.remote")


class TextTokenizer:
    """Text <-> token ids for one model; special-token text in the prompt maps to its id."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._special: dict[str, int] | None = None

    def encode(self, text: str) -> list[int]:
        # The rendered template already spells out BOS and friends: add nothing.
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=False))

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def special_id(self, text: str) -> int | None:
        """The id of the special token spelled ``text``, if the vocabulary has one."""
        if self._special is None:
            added = self._tokenizer.get_added_tokens_decoder()
            self._special = {token.content: i for i, token in added.items() if token.special}
        return self._special.get(text)


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
    data = tokenizer_data(read_gguf_metadata(path))
    tokenizer = None
    try:
        tokenizer = TextTokenizer(build_bpe(data))
    except UnsupportedModel as exc:
        log.warning("no tokenizer rebuilt from GGUF; prompts go upstream as text", reason=str(exc))
    return ModelFiles(
        tokenizer=tokenizer,
        chat_template=data.chat_template,
        bos_token=data.token_text(data.bos_id),
        eos_token=data.token_text(data.eos_id),
    )
