"""What the JSON-argument engine needs to know about one family's markup (see ``_jsoncalls``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, NamedTuple

from accord.pipeline.segments import ToolCall, ToolSpec
from accord.pipeline.tools._jsonscan import UNDECODED
from accord.pipeline.tools.names import resolve_tool_name

#: How much of a payload's start ``CallFormat.payload_prefix_ok`` sees at most.
HEAD_LEN = 64
#: How much of a payload's start ``CallFormat.stream_start`` sees at most: a call whose
#: arguments begin later is reported whole.
STREAM_HEAD_LEN = 256


class Opening(NamedTuple):
    """A call that streams: its declared name, the model's id, where its arguments begin in the payload."""

    name: str
    call_id: str | None
    at: int


#: ``stream_start`` needs more of the payload's head to tell.
UNDECIDED: Final = "undecided"


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
    #: Whether :meth:`stream_start` may say yes (then calls can stream their arguments).
    streams = False
    header_cap = 256
    #: An opener with nothing after it at the end of the output is dropped, not shown
    #: (Mistral's ``[TOOL_CALLS]`` is one special token).
    opener_at_end_is_markup = False
    #: A section begin and end with only whitespace between them are dropped (Kimi-K2
    #: writes such empty sections); elsewhere they are text.
    empty_section_is_markup = False

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

    def stream_start(
        self, opener: str, header: str, head: str, tools: Sequence[ToolSpec]
    ) -> Opening | Literal["undecided"] | None:
        """Whether the call whose payload starts with ``head`` streams its arguments.

        Called once the header is complete and the payload's first bracket has arrived, then
        again as ``head`` grows (up to ``STREAM_HEAD_LEN``) while the answer is ``UNDECIDED``.
        An :class:`Opening` is given only when the name is complete and resolves to a declared
        tool and the arguments' ``{`` is in ``head``; if that call completes, :meth:`calls`
        must report exactly that name and id, with arguments that are the payload's text
        from ``at`` on. ``None``: the call is reported whole (the default).
        """
        del opener, header, head, tools
        return None

    def calls(
        self,
        opener: str,
        header: str,
        payload: str | None,
        tools: Sequence[ToolSpec],
        decoded: Any = UNDECODED,
    ) -> list[ToolCall] | None:
        """The calls one complete block stands for; ``None`` (or none) releases it as text.

        ``decoded`` is the payload's value when it was decoded while scanned (strict JSON).
        """
        raise NotImplementedError


def resolve(raw_name: str, tools: Sequence[ToolSpec]) -> str | None:
    """The declared name (as offered) ``raw_name`` stands for, or ``None`` (SPEC P6)."""
    spec = resolve_tool_name(raw_name.strip(), tools)
    return None if spec is None else spec.name


__all__ = ["HEAD_LEN", "STREAM_HEAD_LEN", "UNDECIDED", "CallFormat", "Opening", "resolve"]
