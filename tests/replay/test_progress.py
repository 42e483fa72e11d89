"""Progress bars go to a terminal only: never into a file or a pipe."""

from __future__ import annotations

import io

from accord.replay.progress import Counter, bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_when_not_a_terminal() -> None:
    stream = io.StringIO()
    assert list(bar(range(5), "x", stream=stream)) == [0, 1, 2, 3, 4]
    counter = Counter("x", total=3, stream=stream)
    counter.step()
    counter.close()
    assert stream.getvalue() == ""


def test_bar_on_a_terminal() -> None:
    stream = _Terminal()
    assert list(bar(range(5), "audit", stream=stream)) == [0, 1, 2, 3, 4]
    counter = Counter("fuzz pipeline", total=3, stream=stream)
    for _ in range(3):
        counter.step()
    counter.close()
    text = stream.getvalue()
    assert "audit:" in text and "/5" in text
    assert "fuzz pipeline:" in text and "/3" in text
