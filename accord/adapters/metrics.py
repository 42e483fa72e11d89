"""Prometheus text metrics (SPEC H1): requests by status and cause, tokens, latency, streams."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Metrics:
    requests: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    tokens: Counter[str] = field(default_factory=Counter)
    first_event_seconds_sum: float = 0.0
    first_event_count: int = 0
    first_token_seconds_sum: float = 0.0
    first_token_count: int = 0
    active_streams: int = 0
    keepalives: int = 0
    extra_counters: Counter[str] = field(default_factory=Counter)

    def request(self, route: str, status: int, cause: str) -> None:
        self.requests[(route, str(status), cause)] += 1

    def render(self) -> str:
        lines = [
            "# HELP accord_requests_total Requests by route, HTTP status and termination cause.",
            "# TYPE accord_requests_total counter",
        ]
        for (route, status, cause), n in sorted(self.requests.items()):
            lines.append(f'accord_requests_total{{route="{route}",status="{status}",cause="{cause}"}} {n}')
        lines += ["# HELP accord_tokens_total Tokens by kind.", "# TYPE accord_tokens_total counter"]
        for kind in ("input", "cached", "output", "reasoning"):
            lines.append(f'accord_tokens_total{{kind="{kind}"}} {self.tokens[kind]}')
        lines += [
            "# HELP accord_time_to_first_event_seconds From request to the first SSE event.",
            "# TYPE accord_time_to_first_event_seconds summary",
            f"accord_time_to_first_event_seconds_sum {self.first_event_seconds_sum:.6f}",
            f"accord_time_to_first_event_seconds_count {self.first_event_count}",
            "# HELP accord_time_to_first_token_seconds From request to the engine's first output.",
            "# TYPE accord_time_to_first_token_seconds summary",
            f"accord_time_to_first_token_seconds_sum {self.first_token_seconds_sum:.6f}",
            f"accord_time_to_first_token_seconds_count {self.first_token_count}",
            "# HELP accord_active_streams Streams open right now.",
            "# TYPE accord_active_streams gauge",
            f"accord_active_streams {self.active_streams}",
            "# HELP accord_keepalives_total Keepalive response.in_progress events sent.",
            "# TYPE accord_keepalives_total counter",
            f"accord_keepalives_total {self.keepalives}",
        ]
        for name, n in sorted(self.extra_counters.items()):
            lines += [f"# TYPE accord_{name} counter", f"accord_{name} {n}"]
        return "\n".join(lines) + "\n"
