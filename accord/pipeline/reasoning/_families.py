"""The ``<think>``-style families and where each one's output starts (SPEC P1, docs/model-formats.md B1-B7, B12).

Where a template was rendered, the prompt's tail decides (``ThinkFormat.start_after``): a
prefilled open tag means the output starts inside, a closed block that it starts outside,
neither that a leading tag in the output opens the block. The defaults below decide only
where no template was rendered (the scripted engine, a remote engine given text), from the
request's switch: ``False`` the block is closed or never opened, ``True`` it is on,
``None`` the model's default.

- ``qwen3``: hybrid Qwen3 writes ``<think>`` itself; Qwen3-Instruct-2507 and Qwen3-Coder
  never think and write none. So without a switch the output opens reasoning only at a
  leading tag; with thinking on it starts inside (Qwen3-2507 Thinking and Qwen3.5 prefill
  the tag), and a leading tag the model writes anyway is dropped.
- ``deepseek_r1``: R1 and the distills prefill ``<think>\\n``, R1-0528 writes it; always thinks.
- ``deepseek_v3``: V3.1/V3.2 thinking switch; the template's default is off.
- ``glm45``: GLM-4.5/4.6 write ``<think>`` at the start of the output themselves.
- ``glm47``: GLM-4.7/5 prefill ``<think>``; with thinking off the prompt closes it.
- ``kimi_k2``: K2-Instruct never thinks; K2 Thinking and K2.6 templates prefill ``<think>``
  when thinking is on, so the output has no open tag then.
- ``mistral``: Magistral writes ``[THINK]…[/THINK]``; its calls open with ``[TOOL_CALLS]``.
- ``gemma4``: Gemma 4 writes its thought as ``<|channel>thought\n…<channel|>`` when the
  system turn carries ``<|think|>`` (thinking on); with thinking off, Google's template
  (llama.cpp ``models/templates/gemma4.jinja``) ends the prompt with an empty block,
  ``<|channel>thought\n<channel|>``, so the output starts outside. The ``thought\n`` label
  is part of the open tag: it names the channel, it is not reasoning.
"""

from __future__ import annotations

from collections.abc import Callable

from accord.pipeline.reasoning import register
from accord.pipeline.reasoning._start import Start
from accord.pipeline.reasoning._think import ThinkFormat, ThinkSplitter
from accord.pipeline.tools.markup import (
    ANGLE_REASONING_EXITS,
    GEMMA4_REASONING_EXITS,
    MISTRAL_REASONING_EXITS,
)


def _inside_unless_off(thinking: bool | None) -> Start:
    return Start.OUTSIDE if thinking is False else Start.INSIDE


def _inside_only_if_on(thinking: bool | None) -> Start:
    return Start.INSIDE if thinking is True else Start.OUTSIDE


def _leading_tag_unless_off(thinking: bool | None) -> Start:
    return Start.OUTSIDE if thinking is False else Start.LEADING_TAG


def _inside_if_on_else_leading_tag(thinking: bool | None) -> Start:
    if thinking is None:
        return Start.LEADING_TAG
    return Start.INSIDE if thinking else Start.OUTSIDE


def _think(start: Callable[[bool | None], Start]) -> ThinkFormat:
    return ThinkFormat("<think>", "</think>", ANGLE_REASONING_EXITS, start)


FORMATS: dict[str, ThinkFormat] = {
    "qwen3": _think(_inside_if_on_else_leading_tag),
    "deepseek_r1": _think(_inside_unless_off),
    "deepseek_v3": _think(_inside_only_if_on),
    "glm45": _think(_leading_tag_unless_off),
    "glm47": _think(_inside_unless_off),
    "kimi_k2": _think(_inside_if_on_else_leading_tag),
    # Magistral and Gemma 4 write their reasoning about the call markup they use; an opener
    # in a block counts as a call only if the block never closes (``hold_openers``).
    "mistral": ThinkFormat(
        "[THINK]", "[/THINK]", MISTRAL_REASONING_EXITS, _leading_tag_unless_off, hold_openers=True
    ),
    "gemma4": ThinkFormat(
        "<|channel>thought\n",
        "<channel|>",
        GEMMA4_REASONING_EXITS,
        _leading_tag_unless_off,
        hold_openers=True,
    ),
}


class _Factory:
    """``factory(thinking, start)`` for one format; a class so the registry shows its name."""

    def __init__(self, name: str, fmt: ThinkFormat) -> None:
        self.name = name
        self._fmt = fmt

    def __call__(self, thinking: bool | None, start: Start | None = None) -> ThinkSplitter:
        return ThinkSplitter(self._fmt, thinking, start)

    def start_after(self, prompt: str) -> Start:
        return self._fmt.start_after(prompt)

    def __repr__(self) -> str:
        return f"<reasoning splitter {self.name}>"


for _name, _fmt in FORMATS.items():
    register(_name, _Factory(_name, _fmt))
