"""Routing in a pool: prefix affinity that stays put, bounded load, least-loaded without a key."""

from __future__ import annotations

import collections

import anyio
import pytest

from accord.engine.upstream import HttpSession, UpstreamPool, base_url


def _pool(n: int, load_factor: float = 1.5) -> UpstreamPool:
    pool = UpstreamPool([f"http://10.0.0.{i}:8000" for i in range(n)], HttpSession(), load_factor=load_factor)
    for u in pool.upstreams:
        u.state = "up"
    return pool


def _pick(pool: UpstreamPool, key: str | None) -> str:
    return anyio.run(pool.choose, key).url


def test_one_key_always_lands_on_the_same_upstream() -> None:
    """A conversation's prefix cache lives on one upstream; its every turn must go back there."""
    pool = _pool(4)
    for key in ("thread-a", "thread-b", "019a-codex-thread"):
        assert len({_pick(pool, key) for _ in range(20)}) == 1


def test_keys_spread_over_the_upstreams() -> None:
    pool = _pool(4)
    counts = collections.Counter(_pick(pool, f"k{i}") for i in range(400))
    assert len(counts) == 4 and min(counts.values()) > 50


def test_removing_an_upstream_moves_only_the_keys_it_held() -> None:
    """Rendezvous hashing: the other upstreams keep their conversations (and caches)."""
    pool = _pool(4)
    before = {f"k{i}": _pick(pool, f"k{i}") for i in range(200)}
    gone = pool.upstreams[1]
    gone.state = "down"
    gone.retry_at = float("inf")
    after = {k: _pick(pool, k) for k in before}
    moved = [k for k in before if before[k] != after[k]]
    assert moved and all(before[k] == gone.url for k in moved)


def test_a_busy_preferred_upstream_spills_over_within_the_load_bound() -> None:
    """Consistent hashing with bounded loads: a hot key does not pile everything on one server."""
    pool = _pool(2, load_factor=1.5)
    preferred = next(u for u in pool.upstreams if u.url == _pick(pool, "hot"))
    other = next(u for u in pool.upstreams if u is not preferred)
    preferred.in_flight = 1
    assert _pick(pool, "hot") == preferred.url  # 2 in flight of a bound of ceil(1.5 * 2 / 2) = 2
    preferred.in_flight = 3
    other.in_flight = 0
    assert _pick(pool, "hot") == other.url


def test_without_a_key_the_least_loaded_upstream_is_chosen() -> None:
    pool = _pool(3)
    pool.upstreams[0].in_flight = 2
    pool.upstreams[1].in_flight = 0
    pool.upstreams[2].in_flight = 1
    assert _pick(pool, None) == pool.upstreams[1].url
    pool.upstreams[1].in_flight = 2
    pool.upstreams[2].in_flight = 2
    assert {_pick(pool, None) for _ in range(6)} == {u.url for u in pool.upstreams}  # ties taken in turn


@pytest.mark.parametrize("url", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"])
def test_upstream_urls_are_named_with_or_without_v1(url: str) -> None:
    assert base_url(url) == "http://h:1"
