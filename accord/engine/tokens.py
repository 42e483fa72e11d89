"""A deterministic stand-in tokenisation for engines without a model tokenizer.

Words, runs of whitespace and single punctuation characters are one token each; a
token's id is a stable hash of its text. Counting is exact and reproducible, which is
all usage accounting needs from the scripted engine.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
VOCAB = 50_000


def pieces(text: str) -> list[str]:
    return _TOKEN.findall(text)


@lru_cache(maxsize=8192)
def token_ids(text: str) -> tuple[int, ...]:
    return tuple(zlib.crc32(p.encode("utf-8", "surrogatepass")) % VOCAB for p in pieces(text))


def count(text: str) -> int:
    return len(pieces(text))
