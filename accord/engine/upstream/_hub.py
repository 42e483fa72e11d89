"""What ``--model`` names, found: a GGUF file, a Hugging Face model directory, or a repo id.

The upstream holds the weights; accord needs only the files that decide what the model is
sent and how its output is read: the tokenizer, the tokenizer config (BOS/EOS), the chat
template and the generation config (default sampling). For a repo id those few files are
fetched with ``huggingface_hub``, so its environment applies as it does everywhere else:
``HF_HOME``/``HF_HUB_CACHE`` for the cache, ``HF_TOKEN`` for gated repos, and
``HF_HUB_OFFLINE=1`` to read the cache without asking the hub.

Without ``--model`` the remote engine asks the upstream what it serves (``/v1/models``)
and resolves that id the same way: vLLM and SGLang report the repo id they loaded,
llama.cpp's server the path of its GGUF file (or its ``--alias``).

Default sampling follows vLLM's reading of ``generation_config.json``: ``temperature``,
``top_p`` and ``top_k`` are the model author's defaults whether or not ``do_sample`` is
set. A GGUF file may carry the same values as ``general.sampling.*`` (llama.cpp's keys).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from accord.engine.upstream._model_files import ModelFiles, load_model_files, read_gguf_metadata
from accord.errors import ConfigError

log = structlog.get_logger("accord.engine.remote")

#: The files fetched for a repo id: never weights.
HUB_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
    "generation_config.json",
)

#: ``org/name`` as the hub spells repo ids (one slash, no path-like parts).
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class ModelNotFound(ConfigError):
    """``--model`` (or the upstream's model id) names nothing accord can read."""


@dataclass(frozen=True)
class SamplingDefaults:
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None

    def given(self) -> dict[str, float | int]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class ResolvedModel:
    files: ModelFiles
    #: Where the files came from: ``gguf``, ``directory`` or ``hub``.
    source: str
    location: str
    sampling: SamplingDefaults = field(default_factory=SamplingDefaults)


def looks_like_repo_id(name: str) -> bool:
    return bool(_REPO_ID.match(name)) and ".." not in name


def resolve_model(name: str | Path) -> ResolvedModel:
    """The model files ``name`` stands for; raises ModelNotFound saying what was tried."""
    text = str(name)
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelNotFound(f"{text}: a model file must be a GGUF file")
        return ResolvedModel(
            files=load_model_files(path), source="gguf", location=str(path), sampling=_gguf_sampling(path)
        )
    if path.is_dir():
        return _from_directory(path, source="directory")
    if looks_like_repo_id(text):
        return _from_directory(Path(_fetch(text)), source="hub", location=text)
    raise ModelNotFound(f"{text}: no such GGUF file or model directory, and not a Hugging Face repo id")


def _fetch(repo_id: str) -> str:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return snapshot_download(repo_id, allow_patterns=list(HUB_FILES))
    except (OSError, ValueError, EntryNotFoundError) as exc:
        raise ModelNotFound(
            f"{repo_id}: could not fetch its tokenizer and template from the Hugging Face hub "
            f"({type(exc).__name__}: {exc}); with HF_HUB_OFFLINE=1 they must already be in the "
            "hub cache (HF_HOME), and a gated repo needs HF_TOKEN"
        ) from exc


def _from_directory(directory: Path, *, source: str, location: str | None = None) -> ResolvedModel:
    files = load_model_files(directory)
    if files.chat_template is None:
        # Processor-style repos keep the template in chat_template.json.
        template = _json(directory / "chat_template.json").get("chat_template")
        if isinstance(template, str) and template:
            files = ModelFiles(
                tokenizer=files.tokenizer,
                chat_template=template,
                bos_token=files.bos_token,
                eos_token=files.eos_token,
            )
    config = _json(directory / "generation_config.json")
    return ResolvedModel(
        files=files,
        source=source,
        location=location or str(directory),
        sampling=_sampling(config.get("temperature"), config.get("top_p"), config.get("top_k")),
    )


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("unreadable model file ignored", path=str(path))
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _gguf_sampling(path: Path) -> SamplingDefaults:
    meta = read_gguf_metadata(path)
    return _sampling(
        meta.get("general.sampling.temp"),
        meta.get("general.sampling.top_p"),
        meta.get("general.sampling.top_k"),
    )


def _sampling(temperature: Any, top_p: Any, top_k: Any) -> SamplingDefaults:
    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    k = top_k if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k > 0 else None
    return SamplingDefaults(temperature=number(temperature), top_p=number(top_p), top_k=k)


def served_model_id(urls: list[str], *, api_key: str | None, timeout: float) -> str:
    """The model id the first answering upstream reports in ``/v1/models``."""
    import httpx

    from accord.engine.upstream._pool import base_url

    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    reasons: list[str] = []
    for url in urls:
        try:
            response = httpx.get(
                base_url(url) + "/v1/models", headers=headers, timeout=timeout, trust_env=False
            )
            if response.status_code == 200:
                ids = [card.get("id") for card in response.json().get("data", []) if isinstance(card, dict)]
                if ids and isinstance(ids[0], str):
                    return ids[0]
                reasons.append(f"{url}: serves no model")
            else:
                reasons.append(f"{url}: HTTP {response.status_code}")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            reasons.append(f"{url}: {type(exc).__name__}")
    raise ModelNotFound(
        "no --model given and no upstream said what it serves (" + "; ".join(reasons) + "); "
        "pass --model with the upstream's GGUF file, model directory or Hugging Face repo id"
    )
