"""Progress bars for the long commands: on stderr, only when stderr is a terminal.

Output meant for a file or a pipe (the verdicts on stdout, ``--json``) is never touched, and
a run under CI or with stderr redirected shows no bar at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


def bar(
    items: Iterable[T], desc: str, *, total: int | None = None, stream: TextIO | None = None
) -> Iterator[T]:
    """``items``, with a tqdm bar on ``stream`` (stderr) when it is a terminal."""
    stream = stream if stream is not None else sys.stderr
    if not stream.isatty():
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc=desc, total=total, file=stream, leave=False, dynamic_ncols=True)


class Counter:
    """A bar for work that is counted as it happens (fuzz examples) rather than iterated.

    ``unit`` names what is counted; ``every_step`` redraws on each step instead of at most ten
    times a second, for counts that rise rarely (recorded exchanges).
    """

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        stream: TextIO | None = None,
        *,
        unit: str = "it",
        every_step: bool = False,
    ) -> None:
        stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        if stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                desc=desc,
                total=total,
                file=stream,
                leave=False,
                dynamic_ncols=True,
                unit=unit,
                mininterval=0 if every_step else 0.1,
            )

    def step(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
