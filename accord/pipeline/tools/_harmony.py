"""gpt-oss (harmony) calls: a message addressed to a tool (docs/model-formats.md B10).

``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{…}<|call|>``, or
with the recipient in the channel: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>``
(the first message of an output has no ``<|start|>assistant``). The harmony reasoning
splitter hands each such message over whole, as content; this parser turns it into a call
(or, for invalid JSON, releases it as text). A message to a recipient that names no declared
tool (gpt-oss's built-in ``to=python``, ``to=browser.search``) cannot be run by anyone: its
body is shown as commentary and its header, which is structure, is dropped, so no header
markup reaches the visible text. With ``tool_choice: "none"`` the ``none`` parser runs
instead and the markup stays text (SPEC P9).

``<|call|>``, ``<|end|>`` and ``<|return|>`` end the payload only outside a JSON string,
as the reasoning splitter ends a JSON call message (arguments may quote the markup), so the
two stages cut the message at the same place, and this parser never holds text across one
of the splitter's pieces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import Content, ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat, resolve
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, is_object
from accord.pipeline.tools.toolbox import ToolBox

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
CALL = "<|call|>"
END = "<|end|>"
RETURN = "<|return|>"

# The header after the opener: role (after <|start|>) or channel text, an optional channel,
# an optional constraint, then <|message|>. No other marker may appear in it.
_TEXT = r"[^<]*"
_HEADER_AFTER_START = re.compile(
    rf"(?P<role>{_TEXT})(?:{re.escape(CHANNEL)}(?P<channel>{_TEXT}))?"
    rf"(?:{re.escape(CONSTRAIN)}{_TEXT})?{re.escape(MESSAGE)}\s*"
)
_HEADER_AFTER_CHANNEL = re.compile(
    rf"(?P<channel>{_TEXT})(?:{re.escape(CONSTRAIN)}{_TEXT})?{re.escape(MESSAGE)}\s*"
)
_RECIPIENT = re.compile(r"(?:^|\s)to=([^\s<]+)")
# A header that reached <|message|>, and the body after it (what a header-only block holds).
_HEAD_AND_BODY = re.compile(
    rf"(?P<head>[^<]*(?:(?:{re.escape(CHANNEL)}|{re.escape(CONSTRAIN)})[^<]*)*){re.escape(MESSAGE)}(?P<body>.*)",
    re.DOTALL,
)


def recipient(header: str) -> str | None:
    """The ``to=`` recipient named in a harmony header, if any."""
    m = _RECIPIENT.search(header)
    return None if m is None else m.group(1)


class HarmonyFormat(CallFormat):
    openers: tuple[str, ...] = (START, CHANNEL)
    closers: tuple[str, ...] = (CALL, END, RETURN)
    header_only = True
    header_cap = 512

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: ToolBox,
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        pattern = _HEADER_AFTER_START if opener == START else _HEADER_AFTER_CHANNEL
        m = pattern.fullmatch(header)
        if m is None:
            return None
        if opener == START:
            target = recipient(m.group("role")) or recipient(m.group("channel") or "")
        else:
            target = recipient(m.group("channel"))
        if target is None:
            return None
        name = resolve(target, tools)
        if name is None:
            return None
        if payload is None:
            return [ToolCall(name=name, arguments="{}")]
        if not is_object(payload, decoded):
            return None
        return [ToolCall(name=name, arguments=payload)]

    def shown_instead(self, opener: str, header: str, payload: str | None, tools: ToolBox) -> Content | None:
        """A complete message to a recipient that names no declared tool: its body, as commentary."""
        m = _HEAD_AND_BODY.fullmatch(header)
        if m is None:
            return None
        target = recipient(m.group("head").replace("<|", " <|"))
        if target is None or resolve(target, tools) is not None:
            return None
        return Content(text=m.group("body") + (payload or ""), phase="commentary")


_FORMAT = HarmonyFormat()


def harmony(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("harmony", harmony)
