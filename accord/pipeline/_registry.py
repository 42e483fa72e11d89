"""One registry pattern for the parser families (reasoning splitters and tool-call parsers).

Each family module registers its factory under a name when imported; a profile or flag
names it. An unknown name raises ``KeyError`` listing the known ones, which the
composition root turns into a configuration error.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class Registry(dict[str, T]):
    """Factories by name, for one kind of parser (a dict, so tests can patch an entry in)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self._kind = kind

    def register(self, name: str, item: T) -> None:
        self[name] = item

    def lookup(self, name: str) -> T:
        try:
            return self[name]
        except KeyError:
            known = ", ".join(self.names())
            raise KeyError(f"unknown {self._kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self)


__all__ = ["Registry"]
