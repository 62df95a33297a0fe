"""``fathom export RUN_ID --format md|html|pdf|csv|json -o FILE``: a past run as a file.

The same exporter as the window's Export… (:mod:`app.export`); a PDF is
typeset by Qt's renderer, loaded only then, with no display needed. Text
formats go to standard output with ``-o -`` (or no ``-o``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.commands.library_access import add_run_id_argument
from app.export.formats import FORMATS, SUFFIX, TEXT_FORMATS, ExportError, format_of

if TYPE_CHECKING:
    from app.export.content import ReportContent
    from app.export.exporter import PdfRenderer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_id_argument(parser)
    parser.add_argument(
        "--format", "-f", choices=FORMATS, help="the format (default: from the suffix of -o)"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="the file to write; - for the standard output"
    )
    parser.add_argument(
        "--include-consulted",
        action="store_true",
        help="also list the sources the run read but the report does not cite",
    )


def run(args: argparse.Namespace) -> int:
    from app.core.errors import FathomError

    to_stdout = args.output in (None, "-")
    try:
        fmt = format_of(
            None if to_stdout else Path(args.output), args.format or ("md" if to_stdout else None)
        )
    except ExportError as exc:
        print(exc, file=sys.stderr)
        return 2
    if to_stdout and fmt not in TEXT_FORMATS:
        print(
            f"A {fmt.upper()} cannot go to the terminal: give a file with -o FILE{SUFFIX[fmt]}.",
            file=sys.stderr,
        )
        return 2
    try:
        content = _load(args.run_id)
        data = _render(content, fmt, args.include_consulted)
        if to_stdout:
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
            return 0
        from app.export.files import write_export

        path = write_export(Path(args.output).expanduser(), data)
    except (ExportError, FathomError) as exc:
        print(exc, file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Cannot write {args.output}: {exc.strerror or exc}.", file=sys.stderr)
        return 1
    print(f"Exported to {path}", file=sys.stderr)
    return 0


def _render(content: ReportContent, fmt: str, include_consulted: bool) -> bytes:
    from app.export.exporter import render

    pdf = _pdf_renderer() if fmt == "pdf" else None
    return render(content, fmt, include_consulted=include_consulted, pdf=pdf)


def _pdf_renderer() -> PdfRenderer:
    """Qt's PDF renderer, offscreen when there is no display; ExportError when Qt cannot load."""
    try:
        from app.ui.exporters import headless_pdf_renderer
    except ImportError as exc:
        raise ExportError(
            f"PDF export needs Qt (PySide6), which could not be loaded: {exc}."
        ) from exc
    return headless_pdf_renderer()


def _load(run_id: str) -> ReportContent:
    from app.core.paths import app_paths
    from app.export.stored import stored_content
    from app.store.research_runs import RunStore

    store = RunStore.open_read_only(
        app_paths()
    )  # no lock: works while a window has the library open
    if store is None:
        raise ExportError(f"No research run '{run_id}'. List runs with `fathom history`.")
    try:
        return stored_content(store, run_id)
    finally:
        store.close()
