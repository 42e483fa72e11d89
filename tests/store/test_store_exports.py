"""The store package's public names exist and are what ``__all__`` says (STYLE 9)."""

from __future__ import annotations

import accord.adapters.store as store


def test_store_exports_resolve() -> None:
    assert len(set(store.__all__)) == len(store.__all__)
    for name in store.__all__:
        assert hasattr(store, name), name
    assert {"ResponseStore", "SQLiteStore", "PostgresStore", "replay"} <= set(store.__all__)
