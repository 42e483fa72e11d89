"""Where the remote engine finds the model's template, tokenizer and sampling defaults (issue 16, scope 1).

``--model`` names a GGUF file, a Hugging Face directory or a repo id; without it the id the
upstream reports is resolved the same way. The hub is unreachable from the test machine, so
the repo-id path runs the real ``huggingface_hub`` code in offline mode against a cache laid
out as the hub lays it out (``models--org--name/{blobs,snapshots/<rev>,refs/main}``), in a
child process because ``huggingface_hub`` reads ``HF_HOME`` and ``HF_HUB_OFFLINE`` when
imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accord.adapters.build import (
    ConfigError,
    TemplateMissing,
    build_remote_engine,
    build_service,
    engine_kind,
)
from accord.config import Settings
from accord.engine.upstream import ModelNotFound, resolve_model
from tests.remote.fake_vllm import FakeVLLM
from tests.remote.harness import Served, serving

REPO = "acme-labs/tiny-chat"
TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}<|assistant|>"
GENERATION = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "do_sample": True}
REPO_ROOT = Path(__file__).resolve().parents[2]


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "hi": 1, "there": 2, "<|end|>": 3}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return str(tokenizer.to_str())


def _model_files(template: bool = True) -> dict[str, str]:
    config: dict[str, Any] = {"bos_token": None, "eos_token": "<|end|>"}
    if template:
        config["chat_template"] = TEMPLATE
    return {
        "tokenizer.json": _tokenizer_json(),
        "tokenizer_config.json": json.dumps(config),
        "generation_config.json": json.dumps(GENERATION),
        # Weights are never fetched: a snapshot may lack them and still resolve.
    }


def lay_out_hub_cache(hf_home: Path, repo_id: str, files: dict[str, str], revision: str = "0" * 40) -> Path:
    """The hub cache's own layout: content-addressed blobs, a snapshot of symlinks, refs/main."""
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        data = text.encode()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return snapshot


_CHILD = """
import json, sys
from accord.config import Settings
from accord.adapters.build import build_remote_engine
from accord.errors import ConfigError
try:
    engine = build_remote_engine(Settings(**json.loads(sys.argv[1])))
except ConfigError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    raise SystemExit(0)
print(json.dumps({
    "template": engine.chat_template,
    "eos": engine.eos_token,
    "ids": engine.tokenizer.encode("hi there") if engine.tokenizer else None,
    "sampling": engine.sampling.given(),
    "name": engine.model_name,
}))
"""


def _resolve_offline(hf_home: Path, settings: dict[str, Any]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(settings)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def upstream_serving_repo_id() -> Iterator[Served]:
    with serving(FakeVLLM("hub", model=REPO)) as served:
        yield served[0]


def test_a_repo_id_resolves_from_the_hub_cache_offline(tmp_path: Path) -> None:
    """--model org/name fetches tokenizer, template and generation config through huggingface_hub."""
    lay_out_hub_cache(tmp_path, REPO, _model_files())
    got = _resolve_offline(tmp_path, {"upstream": ["http://127.0.0.1:9"], "model": REPO})
    assert got["template"] == TEMPLATE and got["eos"] == "<|end|>"
    assert got["ids"] == [1, 2]
    assert got["sampling"] == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


def test_without_model_the_upstreams_served_id_is_resolved_the_same_way(
    tmp_path: Path, upstream_serving_repo_id: Served
) -> None:
    lay_out_hub_cache(tmp_path, REPO, _model_files())
    got = _resolve_offline(tmp_path, {"upstream": [upstream_serving_repo_id.url]})
    assert got["template"] == TEMPLATE and got["ids"] == [1, 2]
    assert got["name"] == REPO  # the name clients see is the one the upstream serves


def test_a_repo_id_missing_from_the_offline_cache_is_refused_saying_why(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    got = _resolve_offline(tmp_path, {"upstream": ["http://127.0.0.1:9"], "model": REPO})
    assert got["error"] == "ModelNotFound"
    assert REPO in got["message"] and "HF_HUB_OFFLINE" in got["message"]


def test_a_model_without_a_template_refuses_to_start_and_says_what_to_pass(tmp_path: Path) -> None:
    lay_out_hub_cache(tmp_path, REPO, _model_files(template=False))
    got = _resolve_offline(tmp_path, {"upstream": ["http://127.0.0.1:9"], "model": REPO})
    assert got["error"] == "TemplateMissing"
    assert "--chat-template" in got["message"] and "plain" in got["message"]


def _directory(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_a_local_directory_gives_template_tokenizer_and_sampling(tmp_path: Path) -> None:
    resolved = resolve_model(_directory(tmp_path, _model_files()))
    assert resolved.source == "directory" and resolved.files.chat_template == TEMPLATE
    assert resolved.files.tokenizer is not None and resolved.files.tokenizer.encode("hi there") == [1, 2]
    assert resolved.sampling.given() == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


def test_a_processor_style_chat_template_json_is_found(tmp_path: Path) -> None:
    files = _model_files(template=False)
    files["chat_template.json"] = json.dumps({"chat_template": TEMPLATE})
    assert resolve_model(_directory(tmp_path, files)).files.chat_template == TEMPLATE


def test_the_smollm2_gguf_resolves_as_a_file(smollm2_gguf: Path) -> None:
    resolved = resolve_model(smollm2_gguf)
    assert resolved.source == "gguf" and resolved.files.chat_template
    assert resolved.files.tokenizer is not None


def test_a_name_that_is_neither_path_nor_repo_id_is_refused() -> None:
    with pytest.raises(ModelNotFound, match="not a Hugging Face repo id"):
        resolve_model("/models/served/elsewhere")


def test_an_unresolvable_served_id_refuses_to_start_and_names_model(tmp_path: Path) -> None:
    """The fake serves ``fake-model``: no file, no repo id; the message says to pass --model."""
    with serving(FakeVLLM("plain")) as served, pytest.raises(ModelNotFound, match="Pass --model") as raised:
        build_remote_engine(Settings(upstream=[served[0].url], data_dir=tmp_path))
    assert "'fake-model'" in str(raised.value)


def test_template_missing_in_process_and_plain_only_when_asked(tmp_path: Path) -> None:
    directory = _directory(tmp_path, _model_files(template=False))
    with pytest.raises(TemplateMissing, match="--chat-template plain"):
        build_remote_engine(Settings(upstream=["http://127.0.0.1:9"], model=directory, data_dir=tmp_path))
    settings = Settings(
        upstream=["http://127.0.0.1:9"],
        model=directory,
        chat_template="plain",  # type: ignore[arg-type]
        data_dir=tmp_path,
        reasoning_parser="none",
        tool_parser="none",
    )
    service = build_service(settings)
    assert service.renderer.source is None  # the built-in plain format


def test_naming_an_upstream_implies_the_remote_engine() -> None:
    assert engine_kind(Settings(upstream=["http://h:8000"])) == "remote"
    assert engine_kind(Settings(prefill_upstream=["http://p"], decode_upstream=["http://d"])) == "remote"
    assert engine_kind(Settings()) == "local"
    with pytest.raises(ConfigError, match="--upstream"):
        engine_kind(Settings(engine="local", upstream=["http://h:8000"]))


def test_upstreams_from_the_environment_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_UPSTREAM", "http://a:8000, http://b:8000")
    monkeypatch.setenv("ACCORD_SERVED_MODEL_NAME", "qwen3,default")
    settings = Settings()
    assert settings.upstream == ["http://a:8000", "http://b:8000"]
    assert settings.served_model_name == ["qwen3", "default"]


def test_the_default_port_is_not_vllms() -> None:
    assert Settings().port == 8400
