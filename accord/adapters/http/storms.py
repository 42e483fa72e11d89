"""Rate-limited logging for messages that can repeat without bound (accept failures and the like).

When the process runs out of file descriptors, every ``accept`` fails and the event loop
logs each failure with a traceback: tens of thousands a second, which fill the disk and
bury the one line that says what happened. :class:`StormFilter` lets the first ``burst``
records with the same logger and message through in each ``window`` seconds, drops the
rest, and says how many it dropped on the first record it lets through afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

#: The loggers a storm comes from: the event loops' own, and hypercorn's error log.
STORM_LOGGERS = ("asyncio", "trio", "hypercorn.error")


class StormFilter(logging.Filter):
    def __init__(
        self, burst: int = 5, window: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        #: (logger, message template) -> (window start, records in it, records dropped)
        self._seen: dict[tuple[str, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        start, count, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self.window:
            start, count = now, 0
        if count >= self.burst:
            self._seen[key] = (start, count, dropped + 1)
            return False
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like this were not logged)"
        self._seen[key] = (start, count + 1, 0)
        if len(self._seen) > 1024:
            # Bounded: a storm of distinct messages must not grow this table without end.
            self._seen.pop(next(iter(self._seen)))
        return True


def install(filter_: StormFilter, names: tuple[str, ...] = STORM_LOGGERS) -> Callable[[], None]:
    """Add ``filter_`` to the storm loggers; returns what removes it again."""
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addFilter(filter_)

    def remove() -> None:
        for logger in loggers:
            logger.removeFilter(filter_)

    return remove
