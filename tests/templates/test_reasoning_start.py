"""Where the output starts is read from the rendered prompt's tail (issue 12, class 1).

A template that prefills the open tag leaves the model inside reasoning, one that renders a
closed block leaves it outside, and one that renders neither (Qwen3-Coder, Qwen3-Instruct-2507,
Kimi-K2-Instruct) leaves the model to open reasoning with a leading tag or not at all. The
tails below are the shapes those templates render after the generation prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from accord.adapters.build import build_app
from accord.adapters.http.app import AccordApp
from accord.adapters.templates import PromptRenderer
from accord.pipeline.reasoning import Start, reasoning_parser
from accord.pipeline.segments import Content, Reasoning, merge_segments
from tests.serving import parse_sse, scripted_settings, write_script

#: A Kimi K3 conversation so far, as its template renders it (the format quoted by the renderer
#: in fw-ai/cookbook#555): a user turn, an assistant turn's response channel, a user turn.
K3_HISTORY = (
    '<|open|>message role="user"<|sep|>hi<|close|>message<|sep|><|end_of_msg|>'
    '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>Hello.<|close|>response<|sep|>'
    "<|close|>message<|sep|><|end_of_msg|>"
    '<|open|>message role="user"<|sep|>2+2?<|close|>message<|sep|><|end_of_msg|>'
)

TAILS = [
    # Qwen3-2507 Thinking and Qwen3.5 prefill the tag with a newline after it.
    ("qwen3", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n", Start.INSIDE),
    # Qwen3 with enable_thinking=false closes an empty block.
    ("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n", Start.OUTSIDE),
    # Qwen3-Coder and Qwen3-Instruct-2507 render no tag: only a leading tag would open it.
    ("qwen3", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", Start.LEADING_TAG),
    # A tag in an earlier turn never decides.
    ("qwen3", "<think>old</think>x<|im_end|>\n<|im_start|>assistant\n", Start.LEADING_TAG),
    ("glm47", "[gMASK]<sop><|user|>hi<|assistant|><think>", Start.INSIDE),
    ("glm47", "[gMASK]<sop><|user|>hi<|assistant|></think>", Start.OUTSIDE),
    ("glm45", "<|user|>\nhi<|assistant|>\n<think></think>\n", Start.OUTSIDE),
    (
        "kimi_k2",
        "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|><think>",
        Start.INSIDE,
    ),
    (
        "kimi_k2",
        "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|>",
        Start.LEADING_TAG,
    ),
    ("deepseek_r1", "<｜User｜>hi<｜Assistant｜><think>\n", Start.INSIDE),
    ("deepseek_v3", "<｜User｜>hi<｜Assistant｜></think>", Start.OUTSIDE),
    ("mistral", "[INST]hi[/INST][THINK]", Start.INSIDE),
    ("mistral", "[INST]hi[/INST]", Start.LEADING_TAG),
    ("harmony", "<|start|>user<|message|>hi<|end|><|start|>assistant", Start.OUTSIDE),
    ("harmony", "<|start|>assistant<|channel|>analysis<|message|>", Start.INSIDE),
    # Gemma 4 with thinking off: the generation prompt closes an empty thought block.
    ("gemma4", "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", Start.OUTSIDE),
    # Thinking on (<|think|> in the system turn): the model opens the block itself.
    ("gemma4", "<|turn>system\n<|think|><turn|>\n<|turn>model\n", Start.LEADING_TAG),
    # After a tool's response the turn goes on, with the same empty block when thinking is off.
    (
        "gemma4",
        "<|tool_response>response:f{value:1}<tool_response|><|channel>thought\n<channel|>",
        Start.OUTSIDE,
    ),
    ("gemma4", "<|turn>model\n<|channel>thought\n", Start.INSIDE),
    # Kimi K3's generation prompt opens the think channel (thinking on, the default) or the
    # response channel (thinking off); an earlier assistant turn's channels never decide.
    ("kimi_k3", K3_HISTORY + '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>', Start.INSIDE),
    ("kimi_k3", K3_HISTORY + '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>', Start.OUTSIDE),
    ("kimi_k3", K3_HISTORY + '<|open|>message role="assistant"<|sep|>', Start.LEADING_TAG),
]


@pytest.mark.parametrize(("family", "prompt", "start"), TAILS)
def test_prompt_tail_decides_where_output_starts(family: str, prompt: str, start: Start) -> None:
    """The family's own tags, read at the end of the prompt, give the start; earlier turns do not."""
    assert reasoning_parser(family).start_after(prompt) is start


@pytest.mark.parametrize(
    ("family", "output", "start", "expect"),
    [
        # Prefilled: no open tag in the output, yet its first part is reasoning.
        (
            "kimi_k2",
            "Weighing it.</think>Answer.",
            Start.INSIDE,
            [Reasoning(text="Weighing it."), Content(text="Answer.")],
        ),
        # An instruct model's answer is content, whatever the family.
        (
            "qwen3",
            "Use `git rebase -i HEAD~3`.",
            Start.LEADING_TAG,
            [Content(text="Use `git rebase -i HEAD~3`.")],
        ),
        # A model that writes the tag though the prompt rendered none still opens the block.
        ("qwen3", "<think>r</think>a", Start.LEADING_TAG, [Reasoning(text="r"), Content(text="a")]),
        # The start read from the prompt wins over the request's switch.
        ("glm47", "a</think>b", Start.OUTSIDE, [Content(text="a</think>b")]),
        (
            "harmony",
            "plan<|end|><|start|>assistant<|channel|>final<|message|>ok",
            Start.INSIDE,
            [Reasoning(text="plan"), Content(text="ok")],
        ),
    ],
)
def test_start_from_prompt_wins_over_the_switch(
    family: str, output: str, start: Start, expect: list[Any]
) -> None:
    """A splitter given the prompt's start splits by it, whole and per character alike."""
    for thinking in (None, True, False):
        whole = reasoning_parser(family)(thinking, start)
        segments = whole.feed(output) + whole.finish()
        per_char = reasoning_parser(family)(thinking, start)
        chars = [s for c in output for s in per_char.feed(c)] + per_char.finish()
        assert merge_segments(segments) == merge_segments(chars) == merge_segments(expect)


def test_defaults_without_a_template_are_right_for_instruct_models() -> None:
    """No template rendered: Qwen3-Coder and Kimi-K2-Instruct answers, with no switch, are content."""
    for family in ("qwen3", "kimi_k2"):
        splitter = reasoning_parser(family)(None)
        assert merge_segments(splitter.feed("The answer is 4.") + splitter.finish()) == [
            Content(text="The answer is 4.")
        ]
        on = reasoning_parser(family)(True)
        assert merge_segments(on.feed("hm</think>4") + on.finish()) == [
            Reasoning(text="hm"),
            Content(text="4"),
        ]


def test_plain_renderer_reads_no_start() -> None:
    """Without a template the renderer says nothing, so the switch and the default decide."""
    assert PromptRenderer.plain().reasoning_start("<think>", reasoning_parser("qwen3")) is None


PREFILL_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n{% if thinking is not defined or thinking %}<think>\n{% endif %}"
)
NO_THINK_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n"
)

#: Gemma 4's generation prompt as its template writes it: with thinking off an empty thought
#: block is closed at the end of the prompt; with thinking on the model opens the block.
GEMMA4_TEMPLATE = (
    "{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}"
    "<|turn>model\n{% if not enable_thinking | default(false) %}<|channel>thought\n<channel|>{% endif %}"
)
GEMMA4_THINKING_TEMPLATE = (
    "{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}<|turn>model\n"
)

#: Kimi K3's generation prompt: the think channel opened (thinking on) or the response channel.
_K3_TURNS = (
    '{% for m in messages %}<|open|>message role="{{ m.role }}"<|sep|>{{ m.content }}'
    '<|close|>message<|sep|><|end_of_msg|>{% endfor %}<|open|>message role="assistant"<|sep|>'
)
K3_THINKING_TEMPLATE = _K3_TURNS + "<|open|>think<|sep|>"
K3_NO_THINK_TEMPLATE = _K3_TURNS + "<|open|>response<|sep|>"


async def _post_both(app: AccordApp, body: dict[str, Any]) -> list[httpx.Response]:
    """Non-streamed and streamed, in one event loop (the app lives in one loop)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as client:
        return [await client.post("/v1/responses", json={**body, "stream": s}) for s in (False, True)]


@pytest.mark.parametrize(
    ("profile", "template", "output", "reasoning", "message", "reasoning_tokens"),
    [
        # A Kimi-K2-Thinking-like template prefills <think>: the output has no open tag.
        # Chunks: "Weighing" " it" "." are 1 + 2 + 1 reasoning tokens; the close tag's 4 go
        # with the answer.
        (
            "kimi_k2",
            PREFILL_TEMPLATE,
            ["Weighing", " it", ".", "</think>", "Answer", "."],
            "Weighing it.",
            "Answer.",
            4,
        ),
        # A Qwen3-Coder-like template renders no block: the answer is the message.
        (
            "qwen3_coder",
            NO_THINK_TEMPLATE,
            ["Use `git", " rebase -i HEAD~3`."],
            None,
            "Use `git rebase -i HEAD~3`.",
            0,
        ),
        # Gemma 4 with thinking off: the prompt closed an empty block; the answer is the message.
        (
            "gemma4",
            GEMMA4_TEMPLATE,
            ["It is", " 4."],
            None,
            "It is 4.",
            0,
        ),
        # Gemma 4 with thinking on: the model opens <|channel>thought itself. The open tag's
        # 6 tokens are counted with the reasoning (1 + 2 + 1 more); the close tag's 4 go with
        # the answer.
        (
            "gemma4",
            GEMMA4_THINKING_TEMPLATE,
            ["<|channel>thought\n", "Weighing", " it", ".", "<channel|>", "Answer", "."],
            "Weighing it.",
            "Answer.",
            10,
        ),
        # Kimi K3, thinking on: the prompt opened the think channel; the response channel's
        # frame and the message's end are markup, not text. Reasoning tokens: 1 + 2 + 1, as
        # for Kimi-K2 above; the channel markers go with the answer.
        (
            "kimi_k3",
            K3_THINKING_TEMPLATE,
            [
                *("Weighing", " it", ".", "<|close|>think<|sep|>", "<|open|>response<|sep|>", "Answer", "."),
                *("<|close|>response<|sep|>", "<|close|>message<|sep|>"),
            ],
            "Weighing it.",
            "Answer.",
            4,
        ),
        # Kimi K3, thinking off: the prompt opened the response channel.
        (
            "kimi_k3",
            K3_NO_THINK_TEMPLATE,
            ["It is", " 4.", "<|close|>response<|sep|>", "<|close|>message<|sep|>"],
            None,
            "It is 4.",
            0,
        ),
    ],
)
def test_http_run_reads_the_start_from_the_rendered_prompt(
    tmp_path: Path,
    profile: str,
    template: str,
    output: list[str],
    reasoning: str | None,
    message: str,
    reasoning_tokens: int,
) -> None:
    """Through the app: the template's tail, not the profile name, decides; reasoning_tokens stay exact."""
    template_file = tmp_path / "chat_template.jinja"
    template_file.write_text(template)
    script = write_script(tmp_path, [{"output": "", "chunks": output}])
    settings = scripted_settings(
        script, profile=profile, reasoning_parser=None, tool_parser=None, chat_template=template_file
    )
    app = build_app(settings)
    responses = anyio.run(_post_both, app, {"model": "m", "input": "go"})
    for stream, response in zip((False, True), responses, strict=True):
        assert response.status_code == 200, response.text
        body = (
            next(e for e in parse_sse(response.content) if e["type"] == "response.completed")["response"]
            if stream
            else response.json()
        )
        kinds = [item["type"] for item in body["output"]]
        summary = [i for i in body["output"] if i["type"] == "reasoning"]
        if reasoning is None:
            assert kinds == ["message"]
        else:
            assert kinds == ["reasoning", "message"]
            assert "".join(c["text"] for c in summary[0]["content"]) == reasoning
        text = body["output"][-1]["content"][0]["text"]
        assert text == message, json.dumps(body["output"])
        assert body["usage"]["output_tokens_details"]["reasoning_tokens"] == reasoning_tokens
