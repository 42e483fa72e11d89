"""``/health`` (liveness) and ``/ready`` (readiness), SPEC H1.

``/health`` answers whether the process serves at all: 200 ``ok``, or 503 ``draining`` once
a shutdown began, so that a load balancer stops sending work. ``/ready`` answers whether a
request would be served now: the engine is loaded (it is, once the app exists: the
composition root builds it first) and, for an engine with upstreams, at least one of them
is not marked down. An engine may report its own readiness through an async
``readiness() -> {"ready": bool, ...}``; its report is passed through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accord.adapters.http.context import Context
from accord.adapters.http.exchange import Exchange


async def health(ctx: Context, ex: Exchange) -> None:
    draining = ctx.runner.lifecycle.draining
    await ex.json(503 if draining else 200, {"status": "draining" if draining else "ok"})


async def engine_readiness(engine: Any) -> dict[str, Any]:
    """The engine's own report if it has one, else one read from its ``statistics()``."""
    readiness = getattr(engine, "readiness", None)
    if readiness is not None:
        return dict(await readiness())
    statistics = getattr(engine, "statistics", None)
    stats = statistics() if callable(statistics) else None
    if isinstance(stats, Mapping) and "pools" in stats:
        pools = [list(p) if isinstance(p, list) else [p] for p in stats["pools"]]
        upstreams = [u for pool in pools for u in pool if isinstance(u, Mapping)]
        # Every pool needs one upstream not known to be down (disaggregated: prefill and decode).
        ready = all(any(u.get("state") != "down" for u in pool) for pool in pools if pool)
        return {
            "ready": ready,
            "upstreams": [{"url": u.get("url"), "state": u.get("state")} for u in upstreams],
        }
    return {"ready": True}


async def ready(ctx: Context, ex: Exchange) -> None:
    report = await engine_readiness(ctx.service.engine)
    draining = ctx.runner.lifecycle.draining
    ok = bool(report.get("ready")) and not draining
    status = "ready" if ok else ("draining" if draining else "not_ready")
    await ex.json(200 if ok else 503, {**report, "ready": ok, "status": status})
