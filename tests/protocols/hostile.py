"""Shared Hypothesis pieces for the hostile-input tests of both request models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from accord.adapters.requests import Conversation, RequestLimits, Sealer
from accord.adapters.templates import PromptRenderer
from accord.errors import RequestError

SEALER = Sealer.from_secret("protocol-request-tests")
PLAIN = PromptRenderer.plain()
GLM = PromptRenderer.from_files(Path(__file__).parent.parent / "templates" / "glm_style.jinja")
LIMITS = RequestLimits(max_input_items=8, max_tools=6, max_string_chars=200)

leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
any_json = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
text = st.text(max_size=16) | st.sampled_from(["", "{}", '{"a": 1}', "[1]"])
call_ids = st.sampled_from(["c1", "c2", "c3"])
names = st.sampled_from(["f", "g", "Bash"])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the plausible value, sometimes any JSON at all in its place."""
    return st.integers(0, 11).flatmap(lambda n: any_json if n == 0 else strategy)


def check_refusal(error: RequestError) -> None:
    """A client error is a 400 that names the field it is about, in a bounded message."""
    assert error.status == 400
    assert error.param, f"refusal without a path: {error.message}"
    assert len(error.message) <= 4000


def render_all(conversation: Conversation) -> None:
    """Both templates render whatever normalised; a template's own refusal is a located 400 too."""
    assert conversation.messages
    PLAIN.render(conversation)
    try:
        GLM.render(conversation)
    except RequestError as exc:
        check_refusal(exc)
