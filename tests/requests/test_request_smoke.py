"""Every captured client request decodes, normalises and renders (issue acceptance, SPEC I1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accord.adapters.requests import NormalizeOptions, RequestLimits, decode_request, normalize
from accord.adapters.templates import PromptRenderer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "requests"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_fixture_request_normalises_and_renders(path: Path) -> None:
    """A real client body must reach the model as a prompt, never a 5xx."""
    body = json.dumps(json.loads(path.read_text())["body"]).encode()
    conv = normalize(decode_request(body, RequestLimits()), options=NormalizeOptions(web_search="drop"))
    assert conv.messages
    assert PromptRenderer.plain().render(conv).endswith("<|assistant|>\n")
