"""``accord serve | replay | audit | fuzz | record`` (also ``python -m accord``).

Every failure a user can cause at start-up (a bad flag or ``ACCORD_*`` value, a missing model,
a port in use, a missing extra) is one line, ``accord: ...``, on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import accord

EXIT_USAGE = 2

SERVE_EXAMPLES = """\
examples:
  accord serve                                   the packaged SmolLM2 on the CPU, http://127.0.0.1:%(port)s
  accord serve --model ./Qwen3-0.6B-Q4_K_M.gguf  a GGUF file (profile and parsers detected)
  accord serve --engine remote --upstream http://gpu-box:8000 --model-name Qwen/Qwen3-8B
                                                 front a vLLM or any OpenAI-compatible server
  accord serve --engine scripted --script examples/demo_rules.json
                                                 canned outputs, for client tests
  ACCORD_PORT=9000 ACCORD_LOG_FORMAT=json accord serve
                                                 every flag is also an ACCORD_<NAME> variable
"""


def _parser() -> argparse.ArgumentParser:
    from accord.config import Settings
    from accord.flags import add_serve_flags

    parser = argparse.ArgumentParser(
        prog="accord", description="OpenAI Responses API server for open-weight models."
    )
    parser.add_argument("--version", action="version", version=f"accord {accord.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    port = Settings.model_fields["port"].default
    serve = sub.add_parser(
        "serve",
        help="serve /v1/responses",
        description="Serve the Responses API.\n\nEvery flag is also an ACCORD_<NAME> environment"
        " variable;\na flag given on the command line wins over the variable.",
        epilog=SERVE_EXAMPLES % {"port": port},
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_serve_flags(serve)

    audit = sub.add_parser(
        "audit",
        help="audit captured Responses SSE streams",
        description="Check captured Responses streams against the wire contract and print a census.",
    )
    audit.add_argument("path", type=Path, help="an .sse capture, or a directory of them (one per server)")
    audit.add_argument("--json", action="store_true", help="print the census as JSON")
    audit.add_argument(
        "--html", type=Path, default=None, metavar="REPORT", help="write a self-contained HTML report there"
    )

    replay = sub.add_parser(
        "replay",
        help="replay recorded traces through today's pipeline",
        description="Replay the traces in a directory and report any that now end differently.",
    )
    replay.add_argument("path", type=Path, help="directory of traces (written by --trace-dir)")
    replay.add_argument("--json", action="store_true", help="print the results as one JSON document")
    replay.add_argument(
        "--rechunk",
        type=int,
        default=None,
        metavar="SEED",
        help="re-split the engine output into random chunks from SEED before replaying",
    )

    record = sub.add_parser(
        "record",
        help="recording proxy in front of any Responses server",
        description="Listen on a port, forward every request to the upstream, and keep each stream.",
    )
    record.add_argument("--upstream", required=True, metavar="URL", help="the Responses server to forward to")
    record.add_argument("--listen", type=int, required=True, metavar="PORT", help="port to listen on")
    record.add_argument("--host", default="127.0.0.1", help="address to listen on [default: 127.0.0.1]")
    record.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="directory to write streams to"
    )

    fuzz = sub.add_parser(
        "fuzz",
        help="chunk-split fuzzing",
        description="Split outputs into random chunks and check every split gives the same result.",
    )
    fuzz_sub = fuzz.add_subparsers(dest="target", required=True, metavar="TARGET")
    fp = fuzz_sub.add_parser("parsers", help="every reasoning and tool parser over the corpus")
    fp.add_argument("--parser", default=None, metavar="NAME", help="only this parser [default: all]")
    _fuzz_flags(fp, examples="splits per output")
    fp.add_argument(
        "--corpus", type=Path, default=None, metavar="DIR", help="raw outputs to split [default: built in]"
    )
    fpl = fuzz_sub.add_parser("pipeline", help="the whole pipeline, engine output to wire events")
    _fuzz_flags(fpl, examples="examples to try")
    return parser


def _fuzz_flags(parser: argparse.ArgumentParser, *, examples: str) -> None:
    parser.add_argument("--seed", type=int, default=0, help="random seed [default: 0]")
    parser.add_argument("--examples", type=int, default=200, metavar="N", help=f"{examples} [default: 200]")


def settings_from_args(args: argparse.Namespace) -> Any:
    from accord.config import Settings
    from accord.flags import settings_kwargs

    return Settings(**settings_kwargs(args))


def fail(message: str) -> int:
    print(f"accord: {message}", file=sys.stderr)
    return EXIT_USAGE


def serve(args: argparse.Namespace) -> int:
    import anyio
    import structlog

    from accord.adapters.logs import configure_logging
    from accord.errors import AccordError
    from accord.startup import settings_problem

    try:
        settings = settings_from_args(args)
    except Exception as exc:
        if (problem := settings_problem(exc)) is None:
            raise
        return fail(problem)
    configure_logging(settings.log_format, settings.log_level)
    if settings.worker_class == "trio":
        from accord.errors import MissingExtra, require_extra

        try:
            require_extra("--worker-class trio", "trio", "trio")
        except MissingExtra as exc:
            return fail(str(exc))
    log = structlog.get_logger("accord.serve")
    try:
        from accord.adapters.build import assemble
        from accord.adapters.http.serve import listen, serve_app

        built = assemble(settings)
        listener = listen(settings.host, settings.port)
    except OSError as exc:
        return fail(f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc).splitlines()[0])
    except (AccordError, ValueError) as exc:
        return fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    engine = built.service.engine
    tls = settings.ssl_certfile is not None and settings.ssl_keyfile is not None
    host, port = listener.getsockname()[:2]
    url = f"{'https' if tls else 'http'}://{'[' + host + ']' if ':' in host else host}:{port}"

    def ready() -> None:
        log.info("ready", url=url, model=engine.model_name, engine=type(engine).__name__)

    anyio.run(
        lambda: serve_app(
            built.app,
            settings.host,
            settings.port,
            grace=settings.shutdown_grace,
            on_ready=ready,
            listener=listener,
            certfile=settings.ssl_certfile,
            keyfile=settings.ssl_keyfile,
        ),
        backend=settings.worker_class,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    from accord.errors import MissingExtra

    try:
        return _tool(args)
    except MissingExtra as exc:
        return fail(str(exc))


def _tool(args: argparse.Namespace) -> int:
    if args.command == "audit":
        if args.html is not None:
            from accord.replay.report import report_path

            return report_path(args.path, args.html, sys.stdout)
        from accord.replay.audit import audit_path

        return audit_path(args.path, sys.stdout, as_json=args.json)
    if args.command == "replay":
        from accord.replay.replay import replay_dir

        return replay_dir(args.path, sys.stdout, rechunk_seed=args.rechunk, as_json=args.json)
    if args.command == "record":
        import anyio

        from accord.replay.proxy import serve_proxy

        anyio.run(serve_proxy, args.upstream, args.host, args.listen, args.out)
        return 0
    if args.command == "fuzz":
        from accord.errors import require_extra

        require_extra("accord fuzz", "fuzz", "hypothesis")
        if args.target == "parsers":
            from accord.replay.parser_fuzz import run_parser_fuzz

            return run_parser_fuzz(args.parser, args.seed, args.examples, args.corpus, sys.stdout)
        from accord.replay.fuzz_pipeline import run_pipeline_fuzz

        return run_pipeline_fuzz(args.seed, args.examples, sys.stdout)
    return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
