"""The composition root: settings -> engine, store, service, run driver, app.

This is the one module that reads :class:`~accord.config.Settings` to decide what to
build, and the only place parts are connected. Each part receives what it uses in its
constructor and is not changed afterwards: the store goes into the service and the store
writer, the hooks into the run driver, the routes and lifespans into the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from accord.adapters.conversations import ConversationTurns
from accord.adapters.http.admission import Admission, default_max_active
from accord.adapters.http.app import AccordApp, Lifespan, RouteSpec
from accord.adapters.http.background import BackgroundRuns
from accord.adapters.http.chat import create_chat_completion
from accord.adapters.http.compact import compact, input_tokens
from accord.adapters.http.completions import create_completion, model_lister
from accord.adapters.http.context import Context
from accord.adapters.http.conversations import ConversationRoutes
from accord.adapters.http.cors import Cors
from accord.adapters.http.messages import count_message_tokens, create_message
from accord.adapters.http.offload import Decoder
from accord.adapters.http.responses import create_response
from accord.adapters.http.safety import RequestGuard
from accord.adapters.http.stored import StoredRoutes
from accord.adapters.metrics import Metrics
from accord.adapters.persistence import StoreWriter
from accord.adapters.requests import RequestLimits, Sealer, referenced_ids
from accord.adapters.runner import Lifecycle, RunHook, Runner
from accord.adapters.service import Prepared, Service
from accord.adapters.store import ResponseStore, SQLiteStore
from accord.adapters.templates import PromptRenderer, load_template_files, resolve_profile
from accord.adapters.traces import TraceRecorder
from accord.config import Settings
from accord.engine.protocol import Engine
from accord.errors import ConfigError, require_extra
from accord.events.trace import TraceOptions
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.run import RunObserver
from accord.pipeline.tools import tool_parser

log = structlog.get_logger("accord.build")

DB_FILE = "accord.db"

__all__ = [
    "PLAIN_TEMPLATE",
    "Assembly",
    "ConfigError",
    "TemplateMissing",
    "assemble",
    "build_app",
    "build_engine",
    "build_remote_engine",
    "build_service",
    "engine_kind",
    "open_store",
]


# -- engine ------------------------------------------------------------------------------
#: ``--chat-template plain``: the built-in plain format, only ever used when asked for.
PLAIN_TEMPLATE = "plain"


def engine_kind(settings: Settings) -> str:
    """The engine to build: as given, else ``remote`` when an upstream is named, else ``local``.

    Naming an upstream is never silently ignored: with an engine that has no use for one, the
    settings are refused.
    """
    upstreams = settings.upstream or settings.prefill_upstream or settings.decode_upstream
    if settings.engine is None:
        return "remote" if upstreams else "local"
    if upstreams and settings.engine != "remote":
        raise ConfigError(f"--upstream is given, but --engine {settings.engine} does not use upstreams")
    return settings.engine


def build_engine(settings: Settings) -> Engine:
    kind = engine_kind(settings)
    if kind == "scripted":
        from accord.engine.scripted import ScriptedEngine, load_script

        if settings.script is None:
            raise ConfigError("--engine scripted needs --script FILE")
        return ScriptedEngine(
            load_script(settings.script),
            model_name=settings.model_name or "scripted",
            max_context=settings.max_context,
        )
    if kind == "local":
        for module in ("torch", "numpy", "gguf"):
            require_extra("the embedded engine (--engine local)", "local", module)
        from accord.engine.local import LocalEngine

        engine: Engine = LocalEngine.load(
            settings.model,
            max_context=settings.max_context,
            device=settings.device,
            kv_cache_tokens=settings.kv_cache_tokens,
        )
        return engine
    if kind == "remote":
        remote: Engine = build_remote_engine(settings)
        return remote
    raise ConfigError(f"unknown engine {kind!r}")


def build_remote_engine(settings: Settings) -> Engine:
    """``--engine remote``: one pool (``--upstream``) or a prefill/decode split.

    The model's files come from ``--model``, else from the id the upstream reports serving;
    with neither a template from them nor ``--chat-template`` the server refuses to start,
    rather than render prompts in a format the model was never trained on.
    """
    from accord.engine.disagg import DisaggEngine
    from accord.engine.remote import RemoteEngine
    from accord.engine.upstream import HttpSession, ModelNotFound, RetryPolicy, resolve_model, served_model_id

    split = bool(settings.prefill_upstream or settings.decode_upstream)
    if split and not (settings.prefill_upstream and settings.decode_upstream):
        raise ConfigError("a prefill/decode split needs both --prefill-upstream and --decode-upstream")
    if not split and not settings.upstream:
        raise ConfigError(
            "--engine remote needs --upstream URL (or --prefill-upstream and --decode-upstream)"
        )
    urls = settings.prefill_upstream if split else settings.upstream
    resolved = None
    names = list(settings.served_model_name)
    if settings.model is not None:
        resolved = resolve_model(settings.model)
    elif settings.chat_template is None:
        # A template given by hand is enough to render: then nothing is looked up, and without
        # a tokenizer prompts go upstream as text for the upstream to tokenise.
        served = served_model_id(
            urls, api_key=settings.upstream_api_key, timeout=settings.upstream_connect_timeout
        )
        try:
            resolved = resolve_model(served)
        except ModelNotFound as exc:
            raise ModelNotFound(
                f"the upstream serves {served!r} and no --model was given: {exc}. Pass --model with the "
                "model's GGUF file, model directory or Hugging Face repo id"
            ) from exc
        names = names or [served]
    if resolved is not None and resolved.files.chat_template is None and settings.chat_template is None:
        raise TemplateMissing(
            f"{resolved.location}: the model's files hold no chat template; pass --chat-template FILE "
            "(a .jinja file, tokenizer_config.json, GGUF or model directory), or --chat-template plain "
            "for accord's plain format"
        )
    if resolved is not None:
        log.info(
            "model files",
            source=resolved.source,
            location=resolved.location,
            tokenizer=resolved.files.tokenizer is not None,
            sampling_defaults=resolved.sampling.given() or None,
        )
    common: dict[str, Any] = {
        "files": resolved.files if resolved is not None else None,
        "model_name": settings.model_name,
        "served_names": names,
        "sampling": resolved.sampling if resolved is not None else None,
        "max_context": settings.max_context,
        "http": HttpSession(
            connect_timeout=settings.upstream_connect_timeout,
            read_timeout=settings.upstream_read_timeout,
            api_key=settings.upstream_api_key,
        ),
        "retry": RetryPolicy(attempts=settings.upstream_attempts),
    }
    if split:
        return DisaggEngine(settings.prefill_upstream, settings.decode_upstream, **common)
    return RemoteEngine(settings.upstream, **common)


class TemplateMissing(ConfigError):
    """The model's files carry no chat template and none was given."""


# -- store -------------------------------------------------------------------------------
def open_store(settings: Settings) -> ResponseStore | None:
    """The store ``--store`` names: ``sqlite:///PATH`` (``sqlite:////abs/path``), ``postgresql://…``,
    or ``none``; by default ``accord.db`` in the data directory."""
    url = settings.store
    if url is None:
        return SQLiteStore(Path(settings.data_dir) / DB_FILE)
    if url.lower() in ("none", "off"):
        return None
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise ConfigError("--store sqlite:///PATH needs a path")
        return SQLiteStore(Path(path))
    if url.startswith(("postgresql://", "postgres://")):
        require_extra("the PostgreSQL store", "postgres", "psycopg_pool")
        from accord.adapters.store import PostgresStore

        return PostgresStore(url)
    raise ConfigError(f"--store must be sqlite:///PATH, postgresql://... or none, not {url!r}")


# -- service -----------------------------------------------------------------------------
def template_source(settings: Settings, engine: Engine) -> tuple[str | None, str, str]:
    """The chat template text (None: the plain built-in format) with its BOS and EOS strings."""
    capabilities = engine.capabilities
    bos, eos = capabilities.bos_token, capabilities.eos_token
    if settings.chat_template is not None and str(settings.chat_template) == PLAIN_TEMPLATE:
        return None, bos, eos
    if settings.chat_template is not None:
        files = load_template_files(Path(settings.chat_template))
        return files.template, files.bos_token or bos, files.eos_token or eos
    return capabilities.chat_template or None, bos, eos


def build_service(
    settings: Settings,
    engine: Engine | None = None,
    *,
    store: ResponseStore | None = None,
    observers: Callable[[], list[RunObserver]] = list,
) -> Service:
    engine = engine if engine is not None else build_engine(settings)
    template, bos, eos = template_source(settings, engine)
    profile = resolve_profile(settings.profile, template)
    reasoning_name = settings.reasoning_parser or profile.reasoning_parser
    tool_name = settings.tool_parser or profile.tool_parser
    try:
        reasoning = reasoning_parser(reasoning_name)
        tools = tool_parser(tool_name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
    renderer = (
        PromptRenderer.from_template(template, bos_token=bos, eos_token=eos, kwargs=profile.template_kwargs)
        if template is not None
        else PromptRenderer.plain()
    )
    log.info(
        "service",
        engine=engine_kind(settings),
        model=engine.model_name,
        profile=profile.name,
        reasoning_parser=reasoning_name,
        tool_parser=tool_name,
        template="model" if template else "plain",
    )
    return Service(
        engine=engine,
        renderer=renderer,
        profile=profile.with_overrides(reasoning_parser=reasoning_name, tool_parser=tool_name),
        reasoning=reasoning,
        tools=tools,
        sealer=Sealer.from_settings(settings.secret_key, settings.data_dir),
        keepalive_interval=settings.keepalive_interval,
        web_search=settings.web_search,
        vision=False,
        observers=observers,
        store=store,
    )


def trace_options(service: Service) -> TraceOptions:
    return TraceOptions(
        reasoning_parser=service.profile.reasoning_parser,
        tool_parser=service.profile.tool_parser,
        profile=service.profile.name,
        model=service.engine.model_name,
        keepalive_interval=service.keepalive_interval,
        web_search=service.web_search,
        vision=service.vision,
        sealed=service.sealer is not None,
    )


# -- the app -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Assembly:
    """Everything one server is made of, as built (tests and tools reach the parts here)."""

    settings: Settings
    service: Service
    store: ResponseStore | None
    runner: Runner
    recorder: TraceRecorder | None
    app: AccordApp


def assemble(settings: Settings, engine: Engine | None = None) -> Assembly:
    """Build the server ``settings`` describe (``engine``: use this one instead of building it)."""
    store = open_store(settings)
    tracing = settings.trace_dir is not None
    service = build_service(
        settings, engine, store=store, observers=(lambda: [TraceRecorder.observer()]) if tracing else list
    )
    metrics = Metrics(service.engine.capabilities.statistics)
    hooks: list[RunHook] = []
    lifespans: list[Lifespan] = []
    writer = (
        StoreWriter(store, settings.store_ttl, max_bytes=settings.store_max_bytes)
        if store is not None
        else None
    )
    if writer is not None:
        hooks.append(writer)
        lifespans.append(writer.lifetime)
    if store is not None:
        hooks.append(ConversationTurns(store))
    recorder: TraceRecorder | None = None
    if settings.trace_dir is not None:

        async def references(prepared: Prepared) -> dict[str, Any] | None:
            ids = referenced_ids(prepared.request)
            return await service.references(ids) if ids else None

        recorder = TraceRecorder(
            Path(settings.trace_dir),
            trace_options(service),
            redact=settings.trace_redact,
            counters=metrics.extra_counters,
            references=references,
        )
        hooks.append(recorder)
        lifespans.append(recorder.running)
    runner = Runner(hooks, metrics, Lifecycle(metrics))
    runs = BackgroundRuns(store, runner, writer.ttl) if store is not None and writer is not None else None
    if runs is not None:
        # Entered after the store's lifetime, so left before it: runs end before the store closes.
        lifespans.append(runs.lifetime)
    limits = RequestLimits.from_settings(settings)
    max_active = settings.max_active_requests or default_max_active(service.engine.capabilities)
    admission = Admission(
        max_active,
        settings.max_waiting_requests if settings.max_waiting_requests is not None else max_active,
        queue_timeout=settings.queue_timeout,
        retry_after=settings.retry_after,
    )
    context = Context(
        service=service,
        runner=runner,
        limits=limits,
        max_body_bytes=settings.max_body_bytes,
        model_names=model_lister(service.engine),
        store=store,
        background=runs,
        decoder=Decoder(
            limits,
            inline_bytes=settings.inline_decode_bytes,
            timeout=settings.decode_timeout,
            workers=settings.decode_workers,
        ),
        admission=admission,
        body_timeout=settings.body_timeout,
        write_timeout=settings.write_timeout,
    )
    routes: list[RouteSpec] = [
        ("POST", r"/v1/responses", create_response),
        ("POST", r"/v1/completions", create_completion),
        ("POST", r"/v1/responses/input_tokens", input_tokens),
        ("POST", r"/v1/responses/compact", compact),
        ("POST", r"/v1/chat/completions", create_chat_completion),
        ("POST", r"/v1/messages", create_message),
        ("POST", r"/v1/messages/count_tokens", count_message_tokens),
    ]
    if store is not None and runs is not None:
        routes += StoredRoutes(store, runs).routes()
        routes += ConversationRoutes(store, service.new_id).routes()
        log.info("store", kind=store.kind, ttl=runs.ttl)
    guard = RequestGuard.for_server(
        # The allowed origins are also what CORS answers to, where that is configured.
        settings.host,
        settings.allowed_hosts,
        settings.allowed_origins,
    )
    cors = Cors(settings.allowed_origins) if settings.allowed_origins else None
    app = AccordApp(context, routes, api_key=settings.api_key, lifespans=lifespans, cors=cors, guard=guard)
    return Assembly(settings, service, store, runner, recorder, app)


def build_app(settings: Settings, engine: Engine | None = None) -> AccordApp:
    return assemble(settings, engine).app
