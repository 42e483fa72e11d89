"""Settings -> a running service: engine, template, profile, parsers, sealer."""

from __future__ import annotations

from pathlib import Path

import structlog

from accord.adapters.requests import Sealer
from accord.adapters.service import Service
from accord.adapters.templates import PromptRenderer, load_template_files, resolve_profile
from accord.config import Settings
from accord.engine.protocol import Engine
from accord.pipeline.reasoning import reasoning_parser
from accord.pipeline.tools import tool_parser

log = structlog.get_logger("accord.build")


class ConfigError(ValueError):
    """The settings cannot produce a working server."""


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
        from accord.engine.local import LocalEngine

        engine: Engine = LocalEngine.load(
            settings.model, max_context=settings.max_context, device=settings.device
        )
        return engine
    if kind == "remote":
        from accord.engine.remote import build_remote_engine

        remote: Engine = build_remote_engine(settings)
        return remote
    raise ConfigError(f"unknown engine {kind!r}")


def template_source(settings: Settings, engine: Engine) -> tuple[str | None, str, str]:
    """The chat template text (None: the plain built-in format) with its BOS and EOS strings."""
    bos = str(getattr(engine, "bos_token", "") or "")
    eos = str(getattr(engine, "eos_token", "") or "")
    if settings.chat_template is not None and str(settings.chat_template) == PLAIN_TEMPLATE:
        return None, bos, eos
    if settings.chat_template is not None:
        files = load_template_files(Path(settings.chat_template))
        return files.template, files.bos_token or bos, files.eos_token or eos
    source = getattr(engine, "chat_template", None)
    return (str(source) if source else None), bos, eos


def build_service(settings: Settings, engine: Engine | None = None) -> Service:
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
        profile=profile,
        reasoning=reasoning,
        tools=tools,
        sealer=Sealer.from_settings(settings.secret_key, settings.data_dir),
        keepalive_interval=settings.keepalive_interval,
        web_search=settings.web_search,
        vision=False,
    )
