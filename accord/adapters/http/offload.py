"""Request decoding off the event loop, under a time budget (SPEC I12; issue: bounded work).

Theory of operation. Decoding and validating a body is pure CPU work whose cost grows with
the body, and msgspec holds the interpreter for the whole of one decode call: a thread
would not let the event loop run meanwhile. So a body above ``inline_bytes`` is decoded in
a worker process (``anyio.to_process``, kept warm between requests), at most ``workers`` at
a time, and the worker is killed when it takes longer than ``timeout`` seconds. What comes
back is the validated request, whose size the limits bound (the shape pass in the worker
refuses a body over a count limit before building anything), so unpickling it here is
cheap. Small bodies, the common case, are decoded in place: below ``inline_bytes`` a decode
takes well under a millisecond.

The body reaches the worker through a private temporary file (created 0600, removed at once)
rather than through the worker's pipe: a pipe would hold two more copies of it here (the
pickled message and the transport's write buffer), and the server's memory is meant to stay
within twice the body.

A :class:`RequestError` does not survive pickling with its status and param (exceptions
are rebuilt from their message alone), so the worker returns the error's fields instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_process
import anyio.to_thread

from accord.adapters.requests import RequestLimits
from accord.errors import RequestError

_ErrorFields = tuple[str, str | None, int, str | None, str]
T = TypeVar("T")
#: A protocol's body decoder (a module-level function, so a worker process can be handed it).
BodyDecoder = Callable[[bytes | bytearray, RequestLimits], T]


def decode_in_worker(path: str, limits: RequestLimits, decode: BodyDecoder[T]) -> T | _ErrorFields:
    """The worker's side: the request in the file at ``path``, or the fields of the error that refused it."""
    with open(path, "rb") as file:
        body = file.read()
    try:
        return decode(body, limits)
    except RequestError as exc:
        return (exc.message, exc.param, exc.status, exc.code, exc.type)


@dataclass(frozen=True)
class Decoder:
    """Decodes request bodies, in place when small and in a worker process otherwise."""

    limits: RequestLimits
    inline_bytes: int = 256 * 1024
    timeout: float = 10.0
    workers: int = 2
    _limiter: list[anyio.CapacityLimiter] = field(default_factory=list, repr=False, compare=False)

    def limiter(self) -> anyio.CapacityLimiter:
        # Made on first use inside the event loop (the app is built before the loop runs).
        if not self._limiter:
            self._limiter.append(anyio.CapacityLimiter(self.workers))
        return self._limiter[0]

    async def decode(self, body: bytes | bytearray, decode: BodyDecoder[T]) -> T:
        """``body`` decoded by ``decode`` (any protocol's), in place or in a worker as above."""
        if len(body) <= self.inline_bytes:
            return decode(body, self.limits)
        fd, path = tempfile.mkstemp(prefix="accord-body-")
        try:
            await anyio.to_thread.run_sync(_write, fd, body)
            with anyio.move_on_after(self.timeout) as scope:
                result = await anyio.to_process.run_sync(
                    decode_in_worker, path, self.limits, decode, cancellable=True, limiter=self.limiter()
                )
        finally:
            os.unlink(path)
        if scope.cancelled_caught:
            raise RequestError(
                f"The request took longer than {self.timeout:g} s to decode and validate.",
                status=413,
                code="request_too_complex",
            )
        if not isinstance(result, tuple):  # a request (a Struct), not the fields of an error
            return result
        message, param, status, code, kind = result
        raise RequestError(message, param=param, status=status, code=code, type=kind)


def _write(fd: int, body: bytes | bytearray) -> None:
    with os.fdopen(fd, "wb") as file:
        file.write(body)
