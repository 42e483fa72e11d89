"""One registry pattern for the parser families (reasoning splitters and tool-call parsers).

Each family module registers its factory under a name when imported; a profile or flag
names it. An unknown name raises ``KeyError`` listing the known ones, which the
composition root turns into a configuration error.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Factories by name, for one kind of parser."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> None:
        self._items[name] = item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self.names())
            raise KeyError(f"unknown {self._kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._items)


__all__ = ["Registry"]
