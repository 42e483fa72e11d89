"""Each family's tool-call markers, spelled once.

The tool formats are built from these, and the reasoning splitters read them: GLM-5.x and
Qwen3.5 call tools from inside an unclosed reasoning block, so a splitter must know where a
family's call section opens (``REASONING_EXITS``) without spelling the markers again.
"""

from __future__ import annotations

#: Hermes/Qwen, GLM and Qwen3-Coder wrap a call in these.
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

#: DeepSeek V3/R1/V3.1.
DEEPSEEK_SECTION_BEGIN = "<｜tool▁calls▁begin｜>"
DEEPSEEK_SECTION_END = "<｜tool▁calls▁end｜>"
DEEPSEEK_CALL_BEGIN = "<｜tool▁call▁begin｜>"
DEEPSEEK_CALL_END = "<｜tool▁call▁end｜>"
DEEPSEEK_SEP = "<｜tool▁sep｜>"

#: DeepSeek V3.2 DSML: the ``｜DSML｜`` prefix is optional.
DSML_OPENERS = ("<｜DSML｜function_calls>", "<function_calls>")
DSML_CLOSERS = ("</｜DSML｜function_calls>", "</function_calls>")
#: DeepSeek V4 names the section ``tool_calls`` (invokes and parameters as in V3.2).
DSML_V4_OPENERS = ("<｜DSML｜tool_calls>",)
DSML_V4_CLOSERS = ("</｜DSML｜tool_calls>",)

#: Kimi-K2, both spellings its templates and outputs use.
KIMI_SECTION_BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
KIMI_SECTION_ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
KIMI_CALL_BEGIN = "<|tool_call_begin|>"
KIMI_CALL_END = "<|tool_call_end|>"

#: Mistral.
MISTRAL_TOOL_CALLS = "[TOOL_CALLS]"

#: Gemma 4: a call is ``<|tool_call>call:NAME{…}<tool_call|>``, strings are quoted by ``<|"|>``.
GEMMA4_CALL_OPEN = "<|tool_call>"
GEMMA4_CALL_CLOSE = "<tool_call|>"
GEMMA4_QUOTE = '<|"|>'

#: Kimi K3 ("XTML"): ``<|open|>``, ``<|close|>`` and ``<|sep|>`` are special tokens that frame
#: named channels, ``<|open|>NAME attrs<|sep|>`` … ``<|close|>NAME<|sep|>``.
K3_TOOLS_OPEN = "<|open|>tools<|sep|>"
K3_TOOLS_CLOSE = "<|close|>tools<|sep|>"
K3_MESSAGE_CLOSE = "<|close|>message<|sep|>"
K3_END_OF_MESSAGE = "<|end_of_msg|>"

#: Where a call section opens for the ``<``-marker families: from one of these on, the
#: output is the tool parser's, even inside an unclosed reasoning block.
ANGLE_REASONING_EXITS: tuple[str, ...] = (
    TOOL_CALL_OPEN,
    DEEPSEEK_SECTION_BEGIN,
    *KIMI_SECTION_BEGINS,
    *DSML_OPENERS,
    *DSML_V4_OPENERS,
)
MISTRAL_REASONING_EXITS: tuple[str, ...] = (MISTRAL_TOOL_CALLS,)
GEMMA4_REASONING_EXITS: tuple[str, ...] = (GEMMA4_CALL_OPEN,)
K3_REASONING_EXITS: tuple[str, ...] = (K3_TOOLS_OPEN,)

__all__ = [
    "ANGLE_REASONING_EXITS",
    "DEEPSEEK_CALL_BEGIN",
    "DEEPSEEK_CALL_END",
    "DEEPSEEK_SECTION_BEGIN",
    "DEEPSEEK_SECTION_END",
    "DEEPSEEK_SEP",
    "DSML_CLOSERS",
    "DSML_OPENERS",
    "DSML_V4_CLOSERS",
    "DSML_V4_OPENERS",
    "GEMMA4_CALL_CLOSE",
    "GEMMA4_CALL_OPEN",
    "GEMMA4_QUOTE",
    "GEMMA4_REASONING_EXITS",
    "K3_END_OF_MESSAGE",
    "K3_MESSAGE_CLOSE",
    "K3_REASONING_EXITS",
    "K3_TOOLS_CLOSE",
    "K3_TOOLS_OPEN",
    "KIMI_CALL_BEGIN",
    "KIMI_CALL_END",
    "KIMI_SECTION_BEGINS",
    "KIMI_SECTION_ENDS",
    "MISTRAL_REASONING_EXITS",
    "MISTRAL_TOOL_CALLS",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
]
