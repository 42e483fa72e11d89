"""Golden conversations: each captured client request pins the Conversation it normalises to.

Why: a change in how a real Codex/SDK body is read changes the prompt the model sees;
that must be a deliberate, reviewed diff. Regenerate with ACCORD_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from request_helpers import FIXTURES, GOLDEN, conversation_view

from accord.adapters.requests import NormalizeOptions, RequestLimits, decode_request, normalize
from accord.errors import RequestError

NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def _body(name: str) -> bytes:
    return json.dumps(json.loads((FIXTURES / f"{name}.json").read_text())["body"]).encode()


@pytest.mark.parametrize("name", NAMES)
def test_fixture_normalises_to_its_golden_conversation(name: str) -> None:
    """Codex bodies carry web_search with external access, so they are read with --web-search=drop."""
    conv = normalize(
        decode_request(_body(name), RequestLimits()), options=NormalizeOptions(web_search="drop")
    )
    view = conversation_view(conv)
    path: Path = GOLDEN / f"{name}.json"
    if os.environ.get("ACCORD_UPDATE_GOLDEN"):
        path.write_text(json.dumps(view, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    assert path.exists(), f"no golden for {name}; run with ACCORD_UPDATE_GOLDEN=1 and review the file"
    assert view == json.loads(path.read_text())


@pytest.mark.parametrize(
    "name", [n for n in NAMES if n.startswith("codex_") and n != "codex_compaction_request"]
)
def test_codex_fixture_is_refused_cleanly_under_the_default_web_search_policy(name: str) -> None:
    """The default policy refuses live web search with a 400 telling Codex users how to turn it off."""
    req = decode_request(_body(name), RequestLimits())
    with pytest.raises(RequestError) as info:
        normalize(req, options=NormalizeOptions())
    assert info.value.status == 400
    assert 'web_search = "disabled"' in info.value.message
    assert info.value.param is not None and info.value.param.startswith("tools[")
