"""What the JSON-argument engine needs to know about one family's markup (see ``_jsoncalls``)."""

from __future__ import annotations

from typing import Any

from accord.pipeline.segments import Content, ToolCall
from accord.pipeline.tools._jsonscan import UNDECODED
from accord.pipeline.tools.toolbox import ToolBox

#: How much of a payload's start ``CallFormat.payload_prefix_ok`` sees at most.
HEAD_LEN = 64


class CallFormat:
    """One family's markup; subclasses set the markers and implement :meth:`calls`."""

    #: Markers that open a call.
    openers: tuple[str, ...] = ()
    #: Markers that end a call and belong to it; none: the call ends with its payload.
    closers: tuple[str, ...] = ()
    #: Markers that end a call without belonging to it (the end of its section).
    soft_closers: tuple[str, ...] = ()
    section_begins: tuple[str, ...] = ()
    section_ends: tuple[str, ...] = ()
    #: A closer ends the payload even inside a JSON string (harmony: closers are tokens the
    #: reasoning splitter has already acted on).
    hard_closers = False
    #: A markdown fence may close the payload before the closer (DeepSeek V3).
    fence = False
    #: A payload may start with ``[`` when the header is blank (Mistral's pre-v11 list).
    array_payload = False
    #: A closer right after the header is a call without arguments.
    header_only = False
    #: A ``{`` at the start of the output (or after a call and ``;``) opens a call (Llama 3).
    bare_calls = False
    #: Whether :meth:`payload_prefix_ok` says anything (then a payload's start is checked).
    checks_payload_prefix = False
    header_cap = 256
    #: An opener with nothing after it at the end of the output is dropped, not shown
    #: (Mistral's ``[TOOL_CALLS]`` is one special token).
    opener_at_end_is_markup = False
    #: Section markers are single special tokens that prose cannot write (Kimi-K2): dropped
    #: wherever they stand, so an empty section, or one holding only noise, shows no markup.
    #: Elsewhere a section marker is markup only around calls.
    section_markers_are_tokens = False

    def header_prefix_ok(self, opener: str, header: str) -> bool:
        """Whether ``header`` can still grow into a valid header; ``False`` fails the call."""
        del opener, header
        return True

    def payload_prefix_ok(self, head: str) -> bool | None:
        """Whether a payload starting with ``head`` may be a call; ``None``: cannot tell yet.

        Still undecided after ``HEAD_LEN`` characters counts as yes.
        """
        del head
        return True

    def shown_instead(self, opener: str, header: str, payload: str | None, tools: ToolBox) -> Content | None:
        """What a complete block that :meth:`calls` refused shows instead of its markup.

        ``None`` (the default): its markup is released as text and read again.
        """
        del opener, header, payload, tools
        return None

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: ToolBox,
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        """The calls one complete block stands for; ``None`` (or none) releases it as text.

        ``decoded`` is the payload's value when it was decoded while scanned (strict JSON).
        """
        raise NotImplementedError


def resolve(raw_name: str, tools: ToolBox) -> str | None:
    """The declared name (as offered) ``raw_name`` stands for, or ``None`` (SPEC P6)."""
    spec = tools.resolve(raw_name)
    return None if spec is None else spec.name


__all__ = ["HEAD_LEN", "CallFormat", "resolve"]
