"""The ``fathom`` command: the window with no arguments, subcommands for headless use.

Each subcommand lives in ``app/commands/<name>.py`` with two functions,
``add_arguments(parser)`` and ``run(args) -> int``; they are imported only
when used, so ``fathom`` alone starts the window without loading the engine.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> one-line help; the module app.commands.<name> implements it
COMMANDS: dict[str, str] = {
    "doctor": "report versions, data dir, reachable model back ends and models",
    "models": "list, download, use and remove research models",
    "ingest": "add files and folders to a collection",
    "collections": "list collections",
    "search": "search a collection",
    "remove": "remove a collection or documents",
    "repair": "compare the catalog with the search index and fix what differs",
    "reindex": "embed a collection again with the current embedding model",
    "watch": "keep collections in step with their folders (re-scan on every change)",
    "ask": "research a question and print a cited report",
    "history": "list past research runs",
    "show": "print one past research run",
    "export": "write a past research run as Markdown, HTML, PDF, or its table as CSV/JSON",
}


def _setup_environment() -> None:
    # Never wait on a model hub: everything Fathom needs ships in its packages.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    # onnxruntime >= 1.32 on Linux/macOS writes a device id and an event cache under
    # ~/.cache/Microsoft and uploads telemetry unless this is set before it loads.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    # Milvus Lite is a gRPC server inside this process, and gRPC's core logs through
    # absl straight to stderr: "WARNING: All log messages before absl::InitializeLog()…"
    # then "fork_posix.cc … skipping fork() handlers" whenever something forks while a
    # call is in flight. Only its errors are worth a line; set before grpc loads.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fathom", description="Deep research over your own documents, offline."
    )
    parser.add_argument(
        "--self-test", action="store_true", help="run a quick end-to-end check and exit"
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        _command_module(name).add_arguments(command_parser)
    return parser


def _command_module(name: str):  # type: ignore[no-untyped-def]
    return importlib.import_module(f"app.commands.{name}")


SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a command ended so


def main(argv: list[str] | None = None) -> int:
    _setup_environment()
    args = build_parser().parse_args(argv)
    if args.version:
        from app import __version__

        print(f"fathom {__version__}")
        return 0
    if args.self_test:
        return int(_command_module("selftest").run(args))
    if args.command is None:
        # Before anything loads Qt: if its window-system libraries are missing, say
        # which packages to install instead of Qt's "Could not load the Qt platform plugin".
        from app.ui.qt_libraries import qt_libraries_problem

        problem = qt_libraries_problem()
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
        from app.ui.main import run_app

        return run_app()
    from app.store.lock import holder_named

    try:
        with holder_named(f"'fathom {args.command}' in a terminal"):
            status: int = _command_module(args.command).run(args)
    except BrokenPipeError:
        # what reads the output stopped early (`fathom show last | head`): as any Unix
        # command, end quietly, without a traceback
        _quiet_stdout()
        return SIGPIPE_STATUS
    return status


def _quiet_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush at exit
    does not fail on the closed pipe again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
