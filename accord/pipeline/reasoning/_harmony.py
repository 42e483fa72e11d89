"""gpt-oss harmony channels -> reasoning, messages and call markup (SPEC P1, docs/model-formats.md B10).

An output is a run of messages, ``header<|message|>body`` + an end token, where a header is
``<|start|>assistant[ to=R]<|channel|>CHANNEL[ to=R][ <|constrain|>json]`` and the first
message has no ``<|start|>assistant`` (the prompt ends with it). Each message maps by its
channel and recipient:

- ``analysis``                    -> :class:`Reasoning`
- ``final`` (or no channel)       -> :class:`Content` (``phase=None``), the answer
- ``commentary``, no recipient    -> :class:`Content` (``phase="commentary"``), a preamble
- any channel with ``to=…``       -> the message's markup, verbatim, as one ``phase=None``
  :class:`Content`: the ``harmony`` tool parser turns it into a call (or, for an undeclared
  recipient or invalid JSON, releases it as text); with ``tool_choice: "none"`` the ``none``
  parser keeps it as text (SPEC P9).

What is dropped: the special tokens ``<|start|>``, ``<|channel|>``, ``<|message|>``,
``<|constrain|>``, ``<|end|>``, ``<|return|>``, ``<|call|>`` and the header text between them
(role, channel name, content type) of every message that is not a call. They are structure,
not text the model wrote for a reader (a header that never reaches ``<|message|>`` is dropped
too). Every character of every message body is kept, in
order, and text outside any message is content.

JSON call bodies quote markup
-----------------------------
A call's arguments may contain the very tokens that end or open a message: a ``write_file``
of a harmony transcript holds ``<|call|>`` or a whole ``<|start|>assistant<|channel|>…``
header. A call body that starts with ``{`` or ``[`` is JSON, and the splitter follows its
strings (quotes and backslash escapes, across chunks): while a string is open, every marker
is data of the body, and the message ends at the first end token outside a string. A body
that is not JSON (``to=python`` code) ends at its first end token, as before.

No reordering downstream
------------------------
The parse stage feeds ``phase=None`` content to the tool parser and passes everything else
straight through, so the tool parser must never hold text across one of this splitter's
other segments. Hence a call message is emitted in one piece, and only once its end token
(``<|call|>``, ``<|end|>`` or ``<|return|>``) has arrived, or at ``finish``; the ``harmony``
tool parser ends a call at those tokens, so it completes the call within that one feed. A
call message cut short by the next header without any end token (malformed) is not a call:
its markup is released as commentary text, so it cannot hold up what follows. Answer text
never ends in part of a marker (this splitter holds that back), so the tool parser holds
nothing there either.
"""

from __future__ import annotations

import enum
import re

from accord.pipeline.holdback import MarkerSet
from accord.pipeline.reasoning import register
from accord.pipeline.reasoning._start import Start
from accord.pipeline.segments import Content, ParsedSegment, Reasoning

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
RETURN = "<|return|>"
CALL = "<|call|>"

_MARKERS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, RETURN, CALL)
_MARKER_SET = MarkerSet(_MARKERS)
_TERMINATORS = frozenset({END, RETURN, CALL})
_HEADER_OPENERS = frozenset({START, CHANNEL})

_RECIPIENT = re.compile(r"(?:^|\s)to=\S")
_QUOTE_OR_ESCAPE = re.compile(r'["\\]')
_CHANNEL_NAME = re.compile(re.escape(CHANNEL) + r"\s*([A-Za-z_]+)")


class _Mode(enum.Enum):
    OUTSIDE = "outside"  # between messages (or before the first header)
    HEADER = "header"
    BODY = "body"


class _Kind(enum.Enum):
    REASONING = "reasoning"
    FINAL = "final"
    COMMENTARY = "commentary"
    CALL = "call"


#: The tokens that end each kind of message: ``<|end|>`` any, ``<|call|>`` a call, ``<|return|>``
#: the answer (and a call, which ``<|return|>`` may also end in the models' output).
_ENDS: dict[_Kind, frozenset[str]] = {
    _Kind.REASONING: frozenset({END}),
    _Kind.COMMENTARY: frozenset({END, RETURN}),
    _Kind.FINAL: frozenset({END, RETURN}),
    _Kind.CALL: frozenset({END, RETURN, CALL}),
}


def _kind(header: str) -> _Kind:
    if _RECIPIENT.search(header.replace("<|", " <|")):
        return _Kind.CALL
    m = _CHANNEL_NAME.search(header)
    channel = m.group(1) if m else ""
    if channel == "analysis":
        return _Kind.REASONING
    if channel == "commentary":
        return _Kind.COMMENTARY
    return _Kind.FINAL


class HarmonySplitter:
    """A ``ReasoningSplitter`` for gpt-oss; ``thinking`` does not change where output starts.

    The prompt ends with ``<|start|>assistant``, so the output starts between messages; a
    prompt that ends inside an ``analysis`` header's body (``start=INSIDE``) leaves the
    output inside that reasoning message.
    """

    #: A header can open a new channel at any point of the output.
    verbatim = False

    def __init__(self, thinking: bool | None = None, start: Start | None = None) -> None:
        del thinking
        inside = start is Start.INSIDE
        self._mode = _Mode.BODY if inside else _Mode.OUTSIDE
        self._kind = _Kind.REASONING if inside else _Kind.FINAL
        self._held = ""
        self._header: list[str] = []
        self._header_has_channel = False
        self._call: list[str] = []
        # A call body's JSON state: None until its first character says whether it is JSON.
        self._json: bool | None = None
        self._in_string = False
        self._escape = False
        # The message whose body a header marker interrupted: if that header never reaches
        # <|message|>, the marker was text of that body (an analysis that mentions
        # "<|channel|>final"), and the header's pieces go back into it.
        self._interrupted: _Kind | None = None
        self._out: list[ParsedSegment] = []

    def feed(self, text: str) -> list[ParsedSegment]:
        if not text:
            return []
        if not self._held and "<" not in text and self._mode is not _Mode.HEADER:
            if self._mode is _Mode.OUTSIDE:
                return [Content(text=text)]
            if self._kind is _Kind.CALL:
                self._call_text(text)
                return []
            return [self._segment(text)]
        self._out = []
        buf, self._held = self._held + text, ""
        pos = 0
        while True:
            at, marker = _MARKER_SET.find(buf, pos)
            if at < 0:
                break
            self._text(buf[pos:at])
            self._marker(marker)
            pos = at + len(marker)
        n = len(buf)
        held = _MARKER_SET.partial_len(buf, pos)
        self._text(buf[pos : n - held])
        self._held = buf[n - held :] if held else ""
        return self._out

    def finish(self) -> list[ParsedSegment]:
        self._out = []
        held, self._held = self._held, ""
        self._text(held)
        if self._mode is _Mode.HEADER and self._interrupted is not None:
            self._resume_interrupted()
        if self._mode is _Mode.BODY and self._kind is _Kind.CALL:
            self._emit_call(phase=None)
        self._header = []
        self._mode = _Mode.OUTSIDE
        return self._out

    def _segment(self, text: str) -> ParsedSegment:
        if self._kind is _Kind.REASONING:
            return Reasoning(text=text)
        if self._kind is _Kind.COMMENTARY:
            return Content(text=text, phase="commentary")
        return Content(text=text)

    def _text(self, text: str) -> None:
        if not text:
            return
        mode = self._mode
        if mode is _Mode.OUTSIDE:
            self._out.append(Content(text=text))
        elif mode is _Mode.HEADER:
            self._header.append(text)
        elif self._kind is _Kind.CALL:
            self._call_text(text)
        else:
            self._out.append(self._segment(text))

    def _marker(self, marker: str) -> None:
        mode = self._mode
        if mode is _Mode.HEADER:
            if marker == MESSAGE:
                self._header.append(marker)
                self._interrupted = None
                self._open_body()
            elif marker == START or (marker == CHANNEL and self._header_has_channel):
                # A new header before this one was finished: the unfinished one is dropped
                # (or, inside a body, was text of it).
                if self._interrupted is not None:
                    kind = self._interrupted
                    self._resume_interrupted()
                    self._interrupted = kind
                self._start_header(marker)
            elif marker in _TERMINATORS:
                if self._interrupted is not None:
                    self._resume_interrupted()
                    self._marker(marker)
                    return
                self._header = []
                self._mode = _Mode.OUTSIDE
            else:
                self._header_has_channel = self._header_has_channel or marker == CHANNEL
                self._header.append(marker)
            return
        if mode is _Mode.BODY:
            if self._in_string and self._kind is _Kind.CALL:
                self._call.append(marker)  # quoted inside a JSON string: data
                return
            if marker in _TERMINATORS and marker not in _ENDS[self._kind]:
                # Only the end tokens of this kind of message end it: an analysis that mentions
                # <|call|> or <|return|> goes on.
                self._text(marker)
                return
            if marker in _TERMINATORS:
                if self._kind is _Kind.CALL:
                    self._call.append(marker)
                    self._emit_call(phase=None)
                self._mode = _Mode.OUTSIDE
                return
            if marker in _HEADER_OPENERS:
                if self._kind is _Kind.CALL:
                    self._emit_call(phase="commentary")
                else:
                    self._interrupted = self._kind
                self._start_header(marker)
                return
            self._text(marker)  # <|message|> or <|constrain|> inside a body: keep as text
            return
        if marker in _HEADER_OPENERS:
            self._start_header(marker)
        elif marker == MESSAGE:
            self._header = [marker]
            self._open_body()
        elif marker == CONSTRAIN:
            self._text(marker)
        # An end token between messages is structure: dropped.

    def _start_header(self, marker: str) -> None:
        self._mode = _Mode.HEADER
        self._header = [marker]
        self._header_has_channel = marker == CHANNEL

    def _resume_interrupted(self) -> None:
        """The header never became one: its pieces are text of the body it interrupted."""
        assert self._interrupted is not None
        pieces, self._header = self._header, []
        self._mode, self._kind, self._interrupted = _Mode.BODY, self._interrupted, None
        self._text("".join(pieces))

    def _open_body(self) -> None:
        self._mode = _Mode.BODY
        self._kind = _kind("".join(self._header))
        self._call = list(self._header) if self._kind is _Kind.CALL else []
        self._header = []
        self._json = None
        self._in_string = self._escape = False

    def _call_text(self, text: str) -> None:
        """Collect call body text, following its JSON strings (see the module notes)."""
        self._call.append(text)
        if self._json is None:
            head = text.lstrip()
            if not head:
                return
            self._json = head[0] in "{["
        if not self._json:
            return
        in_string, i, n = self._in_string, 0, len(text)
        if self._escape:
            self._escape, i = False, 1
        while i < n:
            if not in_string:
                i = text.find('"', i)
                if i < 0:
                    break
                in_string, i = True, i + 1
                continue
            m = _QUOTE_OR_ESCAPE.search(text, i)
            if m is None:
                break
            if m.group() == "\\":
                if m.start() + 1 >= n:
                    self._escape = True
                    break
                i = m.start() + 2
            else:
                in_string, i = False, m.start() + 1
        self._in_string = in_string

    def _emit_call(self, phase: str | None) -> None:
        markup = "".join(self._call)
        self._call = []
        if markup:
            self._out.append(
                Content(text=markup) if phase is None else Content(text=markup, phase="commentary")
            )


_ANALYSIS_OPEN = re.compile(re.escape(CHANNEL) + r"\s*analysis\s*" + re.escape(MESSAGE) + r"\s*$")


class _HarmonyFactory:
    def __call__(self, thinking: bool | None, start: Start | None = None) -> HarmonySplitter:
        return HarmonySplitter(thinking, start)

    def start_after(self, prompt: str) -> Start:
        """Inside when the prompt ends in an open analysis message, else between messages."""
        return Start.INSIDE if _ANALYSIS_OPEN.search(prompt[-64:]) else Start.OUTSIDE

    def __repr__(self) -> str:
        return "<reasoning splitter harmony>"


harmony = _HarmonyFactory()
register("harmony", harmony)


__all__ = ["HarmonySplitter", "harmony"]
