"""A pool of upstream servers: health, load and prefix affinity.

Theory of operation. Nothing runs in the background: an engine is built before any
event loop exists and has no lifecycle hook to own a task, so health is kept by the
requests themselves.

* **Passive checks.** A request that cannot connect, or gets a 5xx, marks its upstream
  *down* with a retry time that doubles on each consecutive failure (capped); any
  answer that proves the server is serving marks it *up*.
* **Active checks.** An upstream never seen, or down and past its retry time, is
  *due*: the next request to choose probes it (``GET /v1/models``, short timeout),
  concurrently with any other due upstream, before choosing. Only one probe per
  upstream runs at a time. A request that finds no upstream up probes them all at
  once, backoff or not, rather than failing outright. The probe also learns the served
  model id and ``max_model_len``. ``list_models`` probes every upstream.
* **Routing.** Without a cache key: the least-loaded upstream (requests accord has in
  flight there), ties taken in turn. With one (``prompt_cache_key``; Codex sends its
  thread id): rendezvous hashing ranks the upstreams for the key, and the first whose
  load stays within ``load_factor`` times the mean takes it -- consistent hashing with
  bounded loads, so a conversation keeps returning to the upstream that holds its
  prefix cache, and a hot key spills over instead of piling up. When an upstream
  leaves or joins, only the keys ranked first on it move.
* **Retry-After.** A 429 or 503 answer that names a time holds its upstream back for
  that long: it is neither chosen nor probed before then, even when nothing else is up.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx
import msgspec
import structlog

from accord.errors import NoHealthyUpstream

log = structlog.get_logger("accord.engine.remote")


class ModelCard(msgspec.Struct, kw_only=True):
    id: str
    max_model_len: int | None = None


class ModelList(msgspec.Struct, kw_only=True):
    data: list[ModelCard]


_models = msgspec.json.Decoder(ModelList)


def base_url(url: str) -> str:
    """``http://h:p``, ``http://h:p/`` and ``http://h:p/v1`` all name one server."""
    url = url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass
class Upstream:
    url: str
    state: Literal["unknown", "up", "down"] = "unknown"
    in_flight: int = 0
    failures: int = 0
    retry_at: float = 0.0
    models: tuple[str, ...] = ()
    max_model_len: int | None = None
    requests: int = 0
    #: The upstream asked not to be sent anything before this time (``Retry-After``).
    held_until: float = 0.0
    probing: anyio.Event | None = field(default=None, repr=False)

    def held(self, now: float) -> bool:
        return now < self.held_until

    def due(self, now: float) -> bool:
        if self.probing is not None:
            return False
        return self.state == "unknown" or (self.state == "down" and now >= self.retry_at)

    def statistics(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "state": self.state,
            "in_flight": self.in_flight,
            "requests": self.requests,
            "failures": self.failures,
            "models": list(self.models),
        }


class HttpSession:
    """The engine's httpx clients, made on first use inside the running event loop.

    Requests are spread over a few clients rather than one: httpcore's pool scans every
    connection for every connection each time a request starts or ends, so its cost per
    request grows with the square of the streams open through it.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float | None = 600.0,
        shards: int = 8,
        api_key: str | None = None,
    ) -> None:
        self.timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=30.0, pool=30.0)
        #: Sent with every request, probes included (``--upstream-api-key``).
        self.headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.shards = max(1, shards)
        self._clients: list[httpx.AsyncClient] = []
        self._turn = 0

    @property
    def client(self) -> httpx.AsyncClient:
        if not self._clients:
            # Streams are long and many: no cap on connections (httpx's default is 100).
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            # One TLS context for all: loading the CA bundle costs ~20 ms a client.
            tls = httpx.create_ssl_context(trust_env=False)
            self._clients = [
                httpx.AsyncClient(
                    timeout=self.timeout, limits=limits, verify=tls, trust_env=False, headers=self.headers
                )
                for _ in range(self.shards)
            ]
        self._turn = (self._turn + 1) % self.shards
        return self._clients[self._turn]

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()


class UpstreamPool:
    def __init__(
        self,
        urls: Sequence[str],
        http: HttpSession,
        *,
        probe_timeout: float = 2.0,
        load_factor: float = 1.5,
        backoff: tuple[float, float] = (0.5, 30.0),
    ) -> None:
        if not urls:
            raise ValueError("an upstream pool needs at least one URL")
        self.upstreams = [Upstream(url=base_url(u)) for u in dict.fromkeys(urls)]
        self.http = http
        self.probe_timeout = probe_timeout
        self.load_factor = load_factor
        self.backoff = backoff
        self._turn = 0

    # -- health ---------------------------------------------------------------------------------

    def mark_up(self, upstream: Upstream) -> None:
        if upstream.state != "up":
            log.info("upstream up", upstream=upstream.url)
        upstream.state, upstream.failures = "up", 0

    def mark_down(self, upstream: Upstream, reason: str, *, retry_after: float | None = None) -> None:
        """Down until its backoff ends -- and not before ``retry_after`` seconds if it said so."""
        upstream.failures += 1
        base, cap = self.backoff
        delay = min(cap, base * 2 ** (upstream.failures - 1))
        now = anyio.current_time()
        if retry_after is not None:
            delay = max(delay, retry_after)
            upstream.held_until = now + retry_after
        upstream.retry_at = now + delay
        if upstream.state != "down":
            log.warning("upstream down", upstream=upstream.url, reason=reason, retry_in_s=delay)
        upstream.state = "down"

    async def probe(self, upstream: Upstream) -> bool:
        """``GET /v1/models``: is it serving, and what? Runs at most once at a time per upstream."""
        if upstream.probing is not None:
            with anyio.move_on_after(self.probe_timeout + 0.5):
                await upstream.probing.wait()
            return upstream.state == "up"
        upstream.probing = anyio.Event()
        try:
            reason = ""
            with anyio.move_on_after(self.probe_timeout):
                try:
                    response = await self.http.client.get(upstream.url + "/v1/models")
                    if response.status_code == 200:
                        listing = _models.decode(response.content)
                        upstream.models = tuple(card.id for card in listing.data)
                        lengths = [c.max_model_len for c in listing.data if c.max_model_len]
                        upstream.max_model_len = lengths[0] if lengths else None
                        self.mark_up(upstream)
                        return True
                    reason = f"HTTP {response.status_code}"
                except (httpx.HTTPError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                    reason = type(exc).__name__
            self.mark_down(upstream, reason or "probe timed out")
            return False
        finally:
            upstream.probing.set()
            upstream.probing = None

    async def _probe_all(self, upstreams: Sequence[Upstream]) -> None:
        if len(upstreams) == 1:
            await self.probe(upstreams[0])
            return
        async with anyio.create_task_group() as tg:
            for upstream in upstreams:
                tg.start_soon(self.probe, upstream)

    async def list_models(self) -> list[str]:
        """Model ids the upstreams serve, asking each of them now; raises when none answers."""
        await self._probe_all(self.upstreams)
        ids = [m for u in self.upstreams if u.state == "up" for m in u.models]
        if not any(u.state == "up" for u in self.upstreams):
            raise NoHealthyUpstream("no upstream is healthy")
        return list(dict.fromkeys(ids))

    # -- routing --------------------------------------------------------------------------------

    async def choose(self, key: str | None = None, exclude: frozenset[str] = frozenset()) -> Upstream:
        """The upstream for the next request (see the module docstring)."""
        now = anyio.current_time()
        # An upstream that asked for time (Retry-After) gets it, even when nothing else is up.
        candidates = [u for u in self.upstreams if u.url not in exclude and not u.held(now)]
        due = [u for u in candidates if u.due(now)]
        if due:
            await self._probe_all(due)
        up = [u for u in candidates if u.state == "up"]
        if not up and candidates:
            # Nothing to route to: the backoff no longer saves anyone time, so ask every
            # candidate now (joining probes already in flight) rather than fail outright.
            await self._probe_all(candidates)
            up = [u for u in candidates if u.state == "up"]
        if not up:
            raise NoHealthyUpstream("no healthy upstream")
        return self._pick(up, key)

    def _pick(self, up: list[Upstream], key: str | None) -> Upstream:
        if len(up) == 1:
            return up[0]
        if key is None:
            least = min(u.in_flight for u in up)
            tied = [u for u in up if u.in_flight == least]
            self._turn += 1
            return tied[self._turn % len(tied)]
        total = sum(u.in_flight for u in up) + 1
        bound = math.ceil(self.load_factor * total / len(up))
        ranked = sorted(up, key=lambda u: _rank(key, u.url), reverse=True)
        return next((u for u in ranked if u.in_flight + 1 <= bound), ranked[0])

    def held_for(self) -> float | None:
        """Seconds until the first upstream held by ``Retry-After`` may be asked again; None: none held."""
        now = anyio.current_time()
        waits = [u.held_until - now for u in self.upstreams if u.held(now)]
        return min(waits) if waits else None

    @contextmanager
    def lease(self, upstream: Upstream) -> Iterator[Upstream]:
        """Counts a request against the upstream's load while it runs."""
        upstream.in_flight += 1
        upstream.requests += 1
        try:
            yield upstream
        finally:
            upstream.in_flight -= 1

    def statistics(self) -> list[dict[str, Any]]:
        return [u.statistics() for u in self.upstreams]


def _rank(key: str, url: str) -> int:
    digest = hashlib.blake2b(f"{key}\x00{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
