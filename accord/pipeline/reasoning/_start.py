"""Where an output starts, relative to reasoning (issue: reasoning start read from the prompt).

Whether the first generated character is reasoning is a fact of the rendered prompt, not of
the family name: a template that prefills ``<think>`` leaves the model inside the block, a
template that renders ``<think></think>`` has closed it, and one that renders neither leaves
the model to open it (or not) with a leading tag. So, after rendering, the prompt's tail is
read (:func:`start_after`). Only where no template was rendered (the scripted engine, a
remote engine given text) does the request's switch with the family's default decide.
"""

from __future__ import annotations

import enum


class Start(enum.Enum):
    """Where an output starts, for one family and prompt (or thinking switch)."""

    #: Inside reasoning: the prompt prefilled the open tag.
    INSIDE = "inside"
    #: Outside, but an open tag at the very start of the output opens the block.
    LEADING_TAG = "leading_tag"
    #: Outside, and it stays outside: the prompt closed the block, all of it is content.
    OUTSIDE = "outside"


def start_after(prompt: str, open_tag: str, close_tag: str) -> Start:
    """The start an output has after ``prompt``, for a family that marks reasoning with these tags.

    - the prompt ends (whitespace aside) with an open tag: the output starts inside;
    - it ends with a close tag (``<think></think>``, ``<think>\\n\\n</think>\\n\\n``): outside;
    - otherwise outside, and a leading open tag in the output opens the block.
    Only the end counts: a tag in an earlier turn never decides.
    """
    tail = prompt.rstrip()
    # The tail is compared without its trailing whitespace, so a tag that ends in layout
    # (Gemma 4's ``<|channel>thought\n``) is compared the same way.
    if tail.endswith(open_tag.rstrip()):
        return Start.INSIDE
    if tail.endswith(close_tag):
        return Start.OUTSIDE
    return Start.LEADING_TAG


__all__ = ["Start", "start_after"]
