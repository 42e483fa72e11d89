"""The ``<think>``-style families and where each one's output starts (SPEC P1, protocol.md B1-B7, B12).

``thinking`` is the request's switch: ``False`` means the prompt closed the block (or never
opened it), so the output starts outside; ``True`` that it is on; ``None`` the model's default.

- ``qwen3``: Qwen3 writes ``<think>`` itself, Qwen3-2507 Thinking and Qwen3.5 prefill it;
  starting inside and dropping a leading tag reads both. Thinking is on by default.
- ``deepseek_r1``: R1 and the distills prefill ``<think>\\n``, R1-0528 writes it; always thinks.
- ``deepseek_v3``: V3.1/V3.2 thinking switch; the template's default is off.
- ``glm45``: GLM-4.5/4.6 write ``<think>`` at the start of the output themselves.
- ``glm47``: GLM-4.7/5 prefill ``<think>``; with thinking off the prompt closes it.
- ``mistral``: Magistral writes ``[THINK]…[/THINK]``; its calls open with ``[TOOL_CALLS]``.
"""

from __future__ import annotations

from accord.pipeline.reasoning import register
from accord.pipeline.reasoning._think import ANGLE_TOOL_OPENERS, Start, ThinkFormat, ThinkSplitter


def _inside_unless_off(thinking: bool | None) -> Start:
    return Start.OUTSIDE if thinking is False else Start.INSIDE


def _inside_only_if_on(thinking: bool | None) -> Start:
    return Start.INSIDE if thinking is True else Start.OUTSIDE


def _leading_tag_unless_off(thinking: bool | None) -> Start:
    return Start.OUTSIDE if thinking is False else Start.LEADING_TAG


FORMATS: dict[str, ThinkFormat] = {
    "qwen3": ThinkFormat("<think>", "</think>", ANGLE_TOOL_OPENERS, _inside_unless_off),
    "deepseek_r1": ThinkFormat("<think>", "</think>", ANGLE_TOOL_OPENERS, _inside_unless_off),
    "deepseek_v3": ThinkFormat("<think>", "</think>", ANGLE_TOOL_OPENERS, _inside_only_if_on),
    "glm45": ThinkFormat("<think>", "</think>", ANGLE_TOOL_OPENERS, _leading_tag_unless_off),
    "glm47": ThinkFormat("<think>", "</think>", ANGLE_TOOL_OPENERS, _inside_unless_off),
    "mistral": ThinkFormat("[THINK]", "[/THINK]", ("[TOOL_CALLS]",), _leading_tag_unless_off),
}


class _Factory:
    """``factory(thinking)`` for one format; a class so the registry shows its name."""

    def __init__(self, name: str, fmt: ThinkFormat) -> None:
        self.name = name
        self._fmt = fmt

    def __call__(self, thinking: bool | None) -> ThinkSplitter:
        return ThinkSplitter(self._fmt, thinking)

    def __repr__(self) -> str:
        return f"<reasoning splitter {self.name}>"


for _name, _fmt in FORMATS.items():
    register(_name, _Factory(_name, _fmt))
