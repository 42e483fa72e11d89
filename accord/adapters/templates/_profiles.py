"""Model profiles: which parsers and template options a model family needs (``--profile``).

A profile only names the reasoning splitter and tool-call parser (they are looked up in
their registries by these names) and carries the template kwargs and stop strings of the
family. Without ``--profile`` the family is detected from markers that only its chat
template contains; a template that matches none is treated as ChatML.
"""

from __future__ import annotations

from typing import Any

import msgspec

ReasoningParserName = str
ToolParserName = str


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    reasoning_parser: ReasoningParserName = "none"
    tool_parser: ToolParserName = "none"
    template_kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    stop: tuple[str, ...] = ()

    def with_overrides(
        self, *, reasoning_parser: str | None = None, tool_parser: str | None = None
    ) -> Profile:
        """Explicit ``--reasoning-parser``/``--tool-parser`` win over the profile."""
        return msgspec.structs.replace(
            self,
            reasoning_parser=reasoning_parser or self.reasoning_parser,
            tool_parser=tool_parser or self.tool_parser,
        )


_IM_END = ("<|im_end|>",)
_GLM_STOP = ("<|user|>", "<|observation|>", "<|endoftext|>")
_DS_STOP = ("<｜end▁of▁sentence｜>",)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        # Hermes-style <tool_call> JSON is the tool format ChatML models are tuned on.
        Profile(name="chatml", tool_parser="hermes", stop=_IM_END),
        Profile(name="qwen3", reasoning_parser="qwen3", tool_parser="hermes", stop=_IM_END),
        Profile(name="qwen3_coder", reasoning_parser="qwen3", tool_parser="qwen3_coder", stop=_IM_END),
        Profile(name="deepseek_v3", tool_parser="deepseek_v3", stop=_DS_STOP),
        Profile(name="deepseek_r1", reasoning_parser="deepseek_r1", tool_parser="deepseek_v3", stop=_DS_STOP),
        Profile(
            name="deepseek_v31", reasoning_parser="deepseek_v3", tool_parser="deepseek_v31", stop=_DS_STOP
        ),
        Profile(
            name="deepseek_v32", reasoning_parser="deepseek_v3", tool_parser="deepseek_v32", stop=_DS_STOP
        ),
        Profile(name="deepseek_v4", reasoning_parser="deepseek_v3", tool_parser="deepseek_v4", stop=_DS_STOP),
        Profile(name="glm45", reasoning_parser="glm45", tool_parser="glm45", stop=_GLM_STOP),
        Profile(name="glm47", reasoning_parser="glm47", tool_parser="glm47", stop=_GLM_STOP),
        # K2-Instruct never thinks; K2 Thinking / K2.6 templates prefill <think> when thinking
        # is on (the rendered prompt's tail says so, see ``Start``).
        Profile(name="kimi_k2", reasoning_parser="kimi_k2", tool_parser="kimi_k2", stop=_IM_END),
        # Kimi K3 frames channels with <|open|>/<|close|>/<|sep|>; a message ends with <|end_of_msg|>.
        Profile(name="kimi_k3", reasoning_parser="kimi_k3", tool_parser="kimi_k3", stop=("<|end_of_msg|>",)),
        Profile(
            name="gpt_oss", reasoning_parser="harmony", tool_parser="harmony", stop=("<|return|>", "<|call|>")
        ),
        Profile(name="llama3", tool_parser="llama3_json", stop=("<|eot_id|>", "<|eom_id|>")),
        # Llama 3.2's prompt format asks for [func(a=1), g()] lists instead of JSON.
        Profile(name="llama3_pythonic", tool_parser="llama3_pythonic", stop=("<|eot_id|>", "<|eom_id|>")),
        Profile(name="mistral", reasoning_parser="mistral", tool_parser="mistral", stop=("</s>",)),
        # Gemma 4 ends a turn with <turn|>; the template writes a tool's response right after
        # the call, in the same turn, so generation stops where that response would open.
        Profile(
            name="gemma4",
            reasoning_parser="gemma4",
            tool_parser="gemma4",
            stop=("<turn|>", "<|tool_response>"),
        ),
    )
}
ALIASES = {"smollm2": "chatml", "hermes": "chatml", "qwen2.5": "chatml", "glm": "glm47", "harmony": "gpt_oss"}


def profile_names() -> list[str]:
    return sorted([*PROFILES, *ALIASES])


def _get(name: str) -> Profile:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(profile_names())}")
    return PROFILES[key]


def detect_family(template: str) -> str | None:
    """The profile whose markers the template carries, or None when nothing is distinctive."""
    if "<|channel|>" in template and "<|start|>" in template:
        return "gpt_oss"
    if "<|turn>" in template and "<|channel>" in template:
        # Gemma 4's turn and channel tokens (Gemma 3 wrote <start_of_turn>).
        return "gemma4"
    if "DSML" in template:
        return "deepseek_v4" if "DSML｜tool_calls" in template else "deepseek_v32"
    if "<｜tool▁sep｜>" in template:
        if "```json" in template:
            return "deepseek_r1" if "<think>" in template else "deepseek_v3"
        return "deepseek_v31"
    if "<arg_key>" in template:
        # GLM-4.5/4.6 close an empty think block after a newline; 4.7 and later prefill it.
        return "glm45" if "\\n<think></think>" in template else "glm47"
    if "<|open|>" in template and "<|sep|>" in template:
        return "kimi_k3"
    if "<|tool_calls_section_begin|>" in template:
        return "kimi_k2"
    if "<function=" in template and "<parameter=" in template:
        return "qwen3_coder"
    if "<|im_start|>" in template:
        return "qwen3" if "<think>" in template else "chatml"
    if "<|start_header_id|>" in template:
        return "llama3_pythonic" if "[func_name1(" in template else "llama3"
    if "[INST]" in template or "[TOOL_CALLS]" in template:
        return "mistral"
    return None


def resolve_profile(name: str | None, template: str | None) -> Profile:
    """``--profile NAME`` if given (ValueError if unknown), else detected, else ChatML."""
    if name:
        return _get(name)
    if template:
        family = detect_family(template)
        if family is not None:
            return PROFILES[family]
    return PROFILES["chatml"]
