"""gpt-oss (harmony) calls: a message addressed to a tool (docs/model-formats.md B10).

``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{…}<|call|>``, or
with the recipient in the channel: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>``
(the first message of an output has no ``<|start|>assistant``). The harmony reasoning
splitter hands each such message over whole, as content; this parser turns it into a call
(or, for an undeclared recipient or invalid JSON, releases it as text). With
``tool_choice: "none"`` the ``none`` parser runs instead and the markup stays text (SPEC P9).

``<|call|>``, ``<|end|>`` and ``<|return|>`` are special tokens that the splitter already
treated as the end of the message, so here they end the payload even inside a JSON string:
the two stages cut the message at the same place, and this parser never holds text across
one of the splitter's pieces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools import register
from accord.pipeline.tools._callformat import CallFormat, resolve
from accord.pipeline.tools._jsoncalls import JsonCallParser
from accord.pipeline.tools._jsonscan import UNDECODED, is_object

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


def recipient(header: str) -> str | None:
    """The ``to=`` recipient named in a harmony header, if any."""
    m = _RECIPIENT.search(header)
    return None if m is None else m.group(1)


class HarmonyFormat(CallFormat):
    openers = (START, CHANNEL)
    closers = (CALL, END, RETURN)
    hard_closers = True
    header_only = True
    header_cap = 512

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: Sequence[ToolSpec],
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


_FORMAT = HarmonyFormat()


def harmony(tools: Sequence[ToolSpec]) -> JsonCallParser:
    return JsonCallParser(_FORMAT, tools)


register("harmony", harmony)
