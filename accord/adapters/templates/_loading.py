"""Finding a model's chat template (and its BOS/EOS text) in the files the model ships.

A GGUF file keeps it in its metadata (``tokenizer.chat_template``); a Hugging Face
directory in ``chat_template.jinja`` or ``tokenizer_config.json``; a ``.jinja`` file is
the template itself (``--chat-template FILE``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from accord.engine.model_files import read_gguf_metadata, tokenizer_data


class TemplateFiles(msgspec.Struct, frozen=True, kw_only=True):
    template: str
    bos_token: str = ""
    eos_token: str = ""


def load_chat_template(path: Path | str) -> str:
    """The chat template stored at ``path``; ValueError when it holds none."""
    return load_template_files(path).template


def load_template_files(path: Path | str) -> TemplateFiles:
    path = Path(path)
    if path.is_dir():
        return _from_hf_dir(path)
    if path.suffix == ".gguf":
        return _from_gguf(path)
    if path.name.endswith(".json"):
        return _from_tokenizer_config(path)
    return TemplateFiles(template=path.read_text(encoding="utf-8"))


def _from_hf_dir(directory: Path) -> TemplateFiles:
    config_path = directory / "tokenizer_config.json"
    jinja_path = directory / "chat_template.jinja"
    config = _from_tokenizer_config(config_path, require=False) if config_path.exists() else None
    if jinja_path.exists():
        template = jinja_path.read_text(encoding="utf-8")
        if config is None:
            return TemplateFiles(template=template)
        return TemplateFiles(template=template, bos_token=config.bos_token, eos_token=config.eos_token)
    if config is None or not config.template:
        raise ValueError(
            f"{directory} has no chat template (no chat_template.jinja, none in tokenizer_config.json)"
        )
    return config


def _token_text(value: Any) -> str:
    # tokenizer_config.json writes special tokens as a string or as an AddedToken dict.
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


def _from_tokenizer_config(path: Path, *, require: bool = True) -> TemplateFiles:
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise ValueError(f"{path} is not a JSON object")
    template = config.get("chat_template")
    if isinstance(template, list):
        # Several named templates: the one named "default" is the chat template.
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if not isinstance(template, str):
        if require:
            raise ValueError(f"{path} has no chat_template")
        template = ""
    return TemplateFiles(
        template=template,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
    )


def _from_gguf(path: Path) -> TemplateFiles:
    data = tokenizer_data(read_gguf_metadata(path))
    if data.chat_template is None:
        raise ValueError(f"{path} has no tokenizer.chat_template")
    return TemplateFiles(
        template=data.chat_template,
        bos_token=data.token_text(data.bos_id),
        eos_token=data.token_text(data.eos_id),
    )
