"""``accord serve | replay | audit | fuzz | record``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_SERVE_FLAGS: list[tuple[str, dict[str, Any]]] = [
    ("--host", {}),
    ("--port", {"type": int}),
    ("--worker-class", {"choices": ["asyncio", "trio"]}),
    ("--engine", {"choices": ["local", "scripted", "remote"]}),
    ("--script", {"type": Path, "help": "rules file of the scripted engine"}),
    (
        "--model",
        {"type": Path, "help": "GGUF file, model directory, or Hugging Face repo id (remote engine)"},
    ),
    ("--model-name", {"help": "model name to report (remote engine: the model id sent upstream)"}),
    ("--served-model-name", {"action": "extend", "nargs": "+", "help": "names clients see; aliases allowed"}),
    ("--profile", {"help": "model profile (parsers and template kwargs)"}),
    ("--chat-template", {"type": Path, "help": "template file, or `plain` for the built-in format"}),
    ("--reasoning-parser", {}),
    ("--tool-parser", {}),
    ("--max-context", {"type": int}),
    ("--device", {}),
    ("--upstream", {"action": "append", "help": "OpenAI-compatible server; implies --engine remote"}),
    ("--prefill-upstream", {"action": "append"}),
    ("--decode-upstream", {"action": "append"}),
    ("--upstream-connect-timeout", {"type": float}),
    ("--upstream-read-timeout", {"type": float}),
    ("--upstream-attempts", {"type": int}),
    ("--upstream-api-key", {"help": "bearer token sent to the upstreams"}),
    ("--keepalive-interval", {"type": float}),
    ("--api-key", {}),
    ("--secret-key", {}),
    ("--data-dir", {"type": Path}),
    ("--store", {"help": "sqlite:///PATH or postgresql://..."}),
    ("--store-ttl", {"type": float}),
    ("--trace-dir", {"type": Path}),
    ("--trace-redact", {"action": "store_true", "default": None}),
    ("--web-search", {"choices": ["refuse", "drop"]}),
    ("--max-body-bytes", {"type": int}),
    ("--shutdown-grace", {"type": float}),
    ("--log-format", {"choices": ["auto", "json", "console"]}),
]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="accord", description="OpenAI Responses API server for open-weight models"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve /v1/responses (every flag also as ACCORD_<NAME>)")
    for flag, kwargs in _SERVE_FLAGS:
        serve.add_argument(flag, **kwargs)

    audit = sub.add_parser("audit", help="audit captured Responses SSE streams")
    audit.add_argument("path", type=Path)
    audit.add_argument("--json", action="store_true")

    replay = sub.add_parser("replay", help="replay recorded traces through today's pipeline")
    replay.add_argument("path", type=Path)
    replay.add_argument("--rechunk", type=int, default=None, metavar="SEED")

    record = sub.add_parser("record", help="recording proxy in front of any Responses server")
    record.add_argument("--upstream", required=True)
    record.add_argument("--listen", type=int, required=True)
    record.add_argument("--host", default="127.0.0.1")
    record.add_argument("--out", type=Path, required=True)

    fuzz = sub.add_parser("fuzz", help="chunk-split fuzzing")
    fuzz_sub = fuzz.add_subparsers(dest="target", required=True)
    fp = fuzz_sub.add_parser("parsers")
    fp.add_argument("--parser", default=None)
    fp.add_argument("--seed", type=int, default=0)
    fp.add_argument("--examples", type=int, default=200)
    fp.add_argument("--corpus", type=Path, default=None)
    fpl = fuzz_sub.add_parser("pipeline")
    fpl.add_argument("--seed", type=int, default=0)
    fpl.add_argument("--examples", type=int, default=200)
    return parser


def settings_from_args(args: argparse.Namespace) -> Any:
    from accord.config import Settings

    given = {
        flag.lstrip("-").replace("-", "_"): getattr(args, flag.lstrip("-").replace("-", "_"))
        for flag, _ in _SERVE_FLAGS
    }
    return Settings(**{k: v for k, v in given.items() if v is not None})


def serve(args: argparse.Namespace) -> int:
    import anyio

    from accord.adapters.build import assemble
    from accord.adapters.http.serve import serve_app
    from accord.adapters.logs import configure_logging
    from accord.errors import ConfigError

    settings = settings_from_args(args)
    configure_logging(settings.log_format)
    try:
        built = assemble(settings)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"accord: {exc}", file=sys.stderr)
        return 2
    app, service = built.app, built.service

    def ready() -> None:
        print(
            f"accord serving {service.engine.model_name} on http://{settings.host}:{settings.port}",
            file=sys.stderr,
        )

    anyio.run(
        lambda: serve_app(app, settings.host, settings.port, grace=settings.shutdown_grace, on_ready=ready),
        backend=settings.worker_class,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "audit":
        from accord.replay.audit import audit_path

        return audit_path(args.path, sys.stdout, as_json=args.json)
    if args.command == "replay":
        from accord.replay.replay import replay_dir

        return replay_dir(args.path, sys.stdout, rechunk_seed=args.rechunk)
    if args.command == "record":
        import anyio

        from accord.replay.proxy import serve_proxy

        anyio.run(serve_proxy, args.upstream, args.host, args.listen, args.out)
        return 0
    if args.command == "fuzz":
        if args.target == "parsers":
            from accord.replay.parser_fuzz import run_parser_fuzz

            return run_parser_fuzz(args.parser, args.seed, args.examples, args.corpus, sys.stdout)
        from accord.replay.fuzz_pipeline import run_pipeline_fuzz

        return run_pipeline_fuzz(args.seed, args.examples, sys.stdout)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
