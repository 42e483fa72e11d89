"""Prometheus metrics (SPEC H1), on a registry of each app's own (tests build many apps).

Labels are bounded by construction: ``route`` is the name of the route that matched (or
``unmatched``), never the raw path; ``cause`` is a termination cause; ``status`` an HTTP
status. Names and bucket bounds follow vLLM's ``/metrics`` where a series means the same
thing (``time_to_first_token_seconds``, ``e2e_request_latency_seconds``,
``num_requests_running`` ...), with the ``accord_`` prefix, so that dashboards built for
one read the other. The bounds are those vLLM's metrics module declares (vllm/engine/metrics.py
in v0, vllm/v1/metrics/loggers.py in v1).

Engine state is read at scrape time from the engine's ``statistics()``: the embedded engine
reports running and waiting requests, KV blocks and prefix-cache hits; the remote engine one
record per upstream (state, in flight, requests, failures). A family an engine does not
report is left out rather than exported as zero.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

#: The content type of the text exposition format ``render`` writes.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
    50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
GAP_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip

TOKEN_KINDS = ("input", "cached", "output", "reasoning")

#: What the engine reports, read at scrape time (None: no engine statistics).
StatisticsSource = Callable[[], Any]


class Metrics:
    """The server's counters and histograms, and the ``/metrics`` text."""

    def __init__(self, statistics: StatisticsSource | None = None, *, process: bool = True) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        #: (route, status, cause) -> count; read by tests and by the exposition.
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.tokens: Counter[str] = Counter()
        self.active_streams = 0
        self.keepalives = 0
        #: Counters other parts keep by name (the trace recorder's), exported as ``accord_<name>``.
        self.extra_counters: Counter[str] = Counter()
        self.statistics = statistics
        labels = ("route", "cause")
        self.ttft = Histogram(
            "accord_time_to_first_token_seconds",
            "From request to the engine's first output.",
            labels,
            buckets=TTFT_BUCKETS,
            registry=self.registry,
        )
        self.first_event = Histogram(
            "accord_time_to_first_event_seconds",
            "From request to the first event written to a stream.",
            ("route",),
            buckets=TTFT_BUCKETS,
            registry=self.registry,
        )
        self.e2e = Histogram(
            "accord_e2e_request_latency_seconds",
            "From request to the end of its response.",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.gap = Histogram(
            "accord_inter_event_gap_seconds",
            "Between consecutive batches of events written to one stream.",
            labels,
            buckets=GAP_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_Counts(self))
        if statistics is not None:
            self.registry.register(_EngineCollector(statistics))
        if process:
            ProcessCollector(namespace="", registry=self.registry)
            PlatformCollector(registry=self.registry)

    def request(self, route: str, status: int, cause: str) -> None:
        self.requests[(route, str(status), cause)] += 1

    def count_usage(self, input_tokens: int, cached: int, output: int, reasoning: int) -> None:
        for kind, n in zip(TOKEN_KINDS, (input_tokens, cached, output, reasoning), strict=True):
            self.tokens[kind] += n

    def timer(self, route: str, started: float) -> RunTimer:
        return RunTimer(self, route, started)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RunTimer:
    """The timings of one response: first event, gaps between batches, end (``perf_counter``)."""

    def __init__(self, metrics: Metrics, route: str, started: float) -> None:
        self.metrics = metrics
        self.route = route
        self.started = started
        self.last: float | None = None
        self.gaps: list[float] = []

    def event(self, streaming: bool) -> None:
        """A batch of events went out."""
        now = time.perf_counter()
        if self.last is None:
            if streaming:
                self.metrics.first_event.labels(self.route).observe(now - self.started)
        else:
            self.gaps.append(now - self.last)
        self.last = now

    def finish(self, cause: str, ttft: float | None) -> None:
        """The response ended by ``cause``; ``ttft``: seconds to the engine's first output, if any."""
        labels = (self.route, cause)
        self.metrics.e2e.labels(*labels).observe(time.perf_counter() - self.started)
        if ttft is not None:
            self.metrics.ttft.labels(*labels).observe(max(0.0, ttft))
        if self.gaps:
            gap = self.metrics.gap.labels(*labels)
            for seconds in self.gaps:
                gap.observe(seconds)


class _Counts(Collector):
    """The plain counters, rendered by prometheus_client (which escapes label values)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        requests = CounterMetricFamily(
            "accord_requests",
            "Requests by route, HTTP status and termination cause.",
            labels=("route", "status", "cause"),
        )
        for key, n in sorted(m.requests.items()):
            requests.add_metric(key, n)
        yield requests
        tokens = CounterMetricFamily("accord_tokens", "Tokens by kind.", labels=("kind",))
        for kind in TOKEN_KINDS:
            tokens.add_metric((kind,), m.tokens[kind])
        yield tokens
        # vLLM's names for the same two sums.
        yield CounterMetricFamily("accord_prompt_tokens", "Prompt tokens processed.", m.tokens["input"])
        yield CounterMetricFamily("accord_generation_tokens", "Tokens generated.", m.tokens["output"])
        yield GaugeMetricFamily("accord_active_streams", "Streams open right now.", m.active_streams)
        yield CounterMetricFamily(
            "accord_keepalives", "Keepalive response.in_progress events sent.", m.keepalives
        )
        for name, n in sorted(m.extra_counters.items()):
            yield CounterMetricFamily(f"accord_{name.removesuffix('_total')}", name.replace("_", " "), n)


class _EngineCollector(Collector):
    """The engine's ``statistics()``, read at each scrape."""

    def __init__(self, statistics: StatisticsSource) -> None:
        self.statistics = statistics

    def collect(self) -> Iterator[Metric]:
        try:
            stats = self.statistics()
        except Exception:
            # A scrape must not fail because the engine is starting or gone.
            return
        if dataclasses.is_dataclass(stats) and not isinstance(stats, type):
            yield from _local_families(dataclasses.asdict(stats))
        elif isinstance(stats, Mapping) and "pools" in stats:
            yield from _upstream_families(stats["pools"])


def _local_families(s: Mapping[str, Any]) -> Iterator[Metric]:
    gauges = (
        ("num_requests_running", "Requests in the engine's running batch.", "running"),
        ("num_requests_waiting", "Requests waiting for the engine.", "waiting"),
        ("kv_blocks_total", "KV-cache blocks.", "blocks_total"),
        ("kv_blocks_used", "KV-cache blocks held by running requests.", "blocks_in_use"),
        ("kv_blocks_free", "KV-cache blocks no running request holds.", "blocks_free"),
        ("kv_blocks_cached", "Free KV-cache blocks that still hold a reusable prefix.", "blocks_cached"),
    )
    for name, doc, key in gauges:
        if key in s:
            yield GaugeMetricFamily(f"accord_{name}", doc, s[key])
    if s.get("blocks_total"):
        yield GaugeMetricFamily(
            "accord_kv_cache_usage_perc",
            "The fraction of KV-cache blocks in use (0 to 1).",
            s["blocks_in_use"] / s["blocks_total"],
        )
    counters = (
        ("prefix_cache_hits", "Prompt tokens served from the prefix cache.", "prefix_hit_tokens"),
        ("prefix_cache_queries", "Prompt tokens looked up in the prefix cache.", "prompt_tokens"),
        ("num_preemptions", "Requests preempted by the scheduler.", "preemptions"),
    )
    for name, doc, key in counters:
        if key in s:
            yield CounterMetricFamily(f"accord_{name}", doc, s[key])


def _upstream_families(pools: Iterable[Any]) -> Iterator[Metric]:
    up = GaugeMetricFamily("accord_upstream_up", "1 when the upstream is taking requests.", labels=["url"])
    in_flight = GaugeMetricFamily(
        "accord_upstream_in_flight", "Requests open to the upstream.", labels=["url"]
    )
    sent = CounterMetricFamily("accord_upstream_requests", "Requests sent to the upstream.", labels=["url"])
    errors = CounterMetricFamily("accord_upstream_errors", "Failed upstream requests.", labels=["url"])
    for pool in pools:
        for u in pool if isinstance(pool, list) else [pool]:
            if not isinstance(u, Mapping) or "url" not in u:
                continue
            url = str(u["url"])
            up.add_metric([url], 1.0 if u.get("state") == "up" else 0.0)
            in_flight.add_metric([url], float(u.get("in_flight", 0)))
            sent.add_metric([url], float(u.get("requests", 0)))
            errors.add_metric([url], float(u.get("failures", 0)))
    yield from (up, in_flight, sent, errors)
