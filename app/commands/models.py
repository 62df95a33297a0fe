"""``fathom models``: list, download, use and remove research models.

``list`` shows what is on this machine (Fathom's downloads, GPT4All's and LM
Studio's folders, Ollama's models, the starter) and what the catalog
recommends, with whether each fits this machine. ``download`` fetches a catalog
model (resumable, verified by sha256) or pulls an Ollama model; ``use`` makes one
the research model; ``remove`` deletes Fathom's own download or an Ollama model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.core.paths import AppPaths
    from app.core.settings import Settings
    from app.model_files.catalog import Catalog
    from app.model_files.download import DownloadProgress
    from app.model_files.model_inventory import ModelRow
    from app.model_files.ollama_admin import PullProgress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # `fathom models` alone lists them, as `fathom models list` does
    parser.set_defaults(json=False, no_ollama=False, refresh=False)
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")
    listing = sub.add_parser("list", help="models on this machine and recommended ones")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--no-ollama", action="store_true", help="do not ask Ollama for its models"
    )
    listing.add_argument(
        "--refresh", action="store_true", help="fetch the catalog again when it is a URL"
    )
    download = sub.add_parser("download", help="download a catalog model (or pull ollama:NAME)")
    download.add_argument("id", help="a catalog id from `fathom models list`, or ollama:NAME")
    download.add_argument(
        "--use", action="store_true", help="make it the research model once downloaded"
    )
    use = sub.add_parser("use", help="make a model the research model")
    use.add_argument(
        "id", help="a key from `fathom models list` (catalog id, GGUF path, ollama:NAME)"
    )
    remove = sub.add_parser("remove", help="delete a model Fathom downloaded, or an Ollama model")
    remove.add_argument("id", help="a key from `fathom models list`")


def run(args: argparse.Namespace) -> int:
    from app.core.errors import FathomError

    try:
        if args.models_command in (None, "list"):
            return _list(args)
        if args.models_command == "download":
            return _download(args)
        if args.models_command == "use":
            return _use(args)
        return _remove(args)
    except FathomError as exc:
        print(f"fathom models: {exc}", file=sys.stderr)
        return 1


# -- shared ---------------------------------------------------------------------------


def _context() -> tuple[Settings, AppPaths]:
    from app.core.paths import app_paths
    from app.core.settings import load_settings

    paths = app_paths()
    settings, problem = load_settings(paths.settings_file)
    if problem:
        print(problem, file=sys.stderr)
    return settings, paths


def _catalog(settings: Settings, paths: AppPaths, *, refresh: bool = False) -> Catalog:
    from app.model_files.catalog import load_catalog, refresh_catalog

    if refresh:
        return refresh_catalog(settings.models.catalog, cache_dir=paths.cache_dir)
    catalog = load_catalog(settings.models.catalog, cache_dir=paths.cache_dir)
    if catalog.note:
        print(catalog.note, file=sys.stderr)
    return catalog


def collect_rows(
    settings: Settings, paths: AppPaths, *, ask_ollama: bool = True, refresh: bool = False
) -> list[ModelRow]:
    from app.llm.ollama_client import ollama_models_if_running
    from app.model_files.machine_fit import measure_for_research
    from app.model_files.model_inventory import list_models

    catalog = _catalog(settings, paths, refresh=refresh)
    ollama = (
        asyncio.run(ollama_models_if_running(settings.model.ollama.host)) if ask_ollama else None
    )
    return list_models(
        settings, paths, catalog, measure_for_research(settings, paths), ollama=ollama
    )


def _gb(size: int) -> str:
    return f"{size / 1024**3:.1f} GB" if size else ""


# -- list -----------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    from app.commands.collections import format_table
    from app.model_files.machine_speed import about

    settings, paths = _context()
    rows = collect_rows(settings, paths, ask_ollama=not args.no_ollama, refresh=args.refresh)
    if args.json:
        json.dump([_row_json(r) for r in rows], sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    table = [
        (
            ("* " if r.in_use else "  ") + r.key,
            r.name,
            r.source_label,
            r.parameters,
            r.quantization,
            _gb(r.size_bytes),
            _gb(r.ram_needed),
            str(r.context or ""),
            "yes" if r.reasoning else ("?" if r.reasoning is None else "no"),
            r.license,
            r.fit.verdict + (" (recommended)" if r.recommended else ""),
            about(r.answer_s) if r.answer_s is not None else "",
        )
        for r in rows
    ]
    header = (
        "  KEY",
        "NAME",
        "WHERE",
        "PARAMS",
        "QUANT",
        "FILE",
        "MEMORY",
        "CONTEXT",
        "THINKS",
        "LICENCE",
        "FITS",
        "DEEP ANSWER",
    )
    print(format_table(header, table, last_max=40))
    problems = [r for r in rows if r.problem]
    for row in problems:
        print(f"! {row.path or row.name}: {row.problem}", file=sys.stderr)
    print(
        "\n* the research model now. `fathom models use KEY` changes it; `fathom models download ID` fetches one."
    )
    if any(r.answer_s is not None for r in rows):
        print(
            "DEEP ANSWER: about how long one takes here, from the starter model's speed measured on this computer."
        )
    return 0


def _row_json(row: ModelRow) -> dict[str, Any]:
    data = asdict(row)
    data["fit"] = {"verdict": row.fit.verdict, "reason": row.fit.reason}
    data["where"] = row.source_label
    return data


# -- download ---------------------------------------------------------------------------


class _ProgressLine:
    """One line redrawn on a terminal; a line per 10% otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last_decile = -1
        self.last_draw = 0.0

    def show(
        self,
        done: int,
        total: int,
        speed_bps: float = 0.0,
        eta_s: float | None = None,
        status: str = "",
    ) -> None:
        from app.commands.terminal import format_duration

        percent = done * 100 // total if total else 0
        now = time.monotonic()
        text = f"{self.label}: {done / 1024**3:.2f} / {total / 1024**3:.2f} GB  {percent}%"
        if speed_bps:
            text += f"  {speed_bps / 1024**2:.1f} MB/s"
        if eta_s is not None:
            text += f"  {format_duration(eta_s)} left"
        if status:
            text += f"  {status}"
        if self.tty:
            if now - self.last_draw >= 0.2 or done == total:
                self.last_draw = now
                sys.stderr.write("\r" + text.ljust(78))
                sys.stderr.flush()
        elif percent // 10 != self.last_decile:
            self.last_decile = percent // 10
            print(text, file=sys.stderr)

    def end(self) -> None:
        if self.tty:
            sys.stderr.write("\n")

    def stopped(self, what_is_kept: str) -> int:
        """End the line after Ctrl+C, say what is kept; the exit status."""
        self.end()
        print(f"Stopped. {what_is_kept}", file=sys.stderr)
        return 130


def _download(args: argparse.Namespace) -> int:
    from app.model_files.model_inventory import OLLAMA_PREFIX, ModelChoiceError

    settings, paths = _context()
    if args.id.startswith(OLLAMA_PREFIX):
        return _pull(settings, paths, args.id[len(OLLAMA_PREFIX) :], use=args.use)
    catalog = _catalog(settings, paths)
    entry = catalog.get(args.id)
    if entry is None:
        ids = ", ".join(e.id for e in catalog.entries)
        raise ModelChoiceError(f"The catalog has no model '{args.id}'.", f"Its models: {ids}.")
    from app.model_files.download import download_file

    target = paths.models_dir / entry.file_name
    line = _ProgressLine(entry.name)
    print(f"Downloading {entry.name} ({_gb(entry.size_bytes)}) from {entry.url}", file=sys.stderr)

    def progress(p: DownloadProgress) -> None:
        line.show(p.done, p.total or entry.size_bytes, p.speed_bps, p.eta_s)

    try:
        path = download_file(
            entry.url, target, sha256=entry.sha256, size_bytes=entry.size_bytes, progress=progress
        )
    except KeyboardInterrupt:
        return line.stopped("The part downloaded is kept: run the same command to resume.")
    line.end()
    print(f"Verified (sha256) and saved: {path}")
    return _use_or_say_how(settings, paths, entry.id, use=args.use)


def _pull(settings: Settings, paths: AppPaths, name: str, *, use: bool) -> int:
    from app.model_files.ollama_admin import pull_ollama_model

    line = _ProgressLine(f"ollama pull {name}")

    def progress(p: PullProgress) -> None:
        line.show(p.completed, p.total, status=p.status)

    try:
        asyncio.run(pull_ollama_model(settings.model.ollama.host, name, progress=progress))
    except KeyboardInterrupt:
        return line.stopped("Ollama keeps what it downloaded: pull again to resume.")
    line.end()
    print(f"Ollama has {name}.")
    return _use_or_say_how(settings, paths, f"ollama:{name}", use=use)


# -- use / remove -----------------------------------------------------------------------


def _make_used(settings: Settings, paths: AppPaths, key: str) -> int:
    from app.core.settings import save_settings
    from app.model_files.model_inventory import find_row, settings_using

    rows = collect_rows(settings, paths, ask_ollama=key.startswith("ollama:") or ":" in key)
    row = find_row(rows, key)
    save_settings(settings_using(row, settings), paths.settings_file)
    print(f"Research now uses {row.name} ({row.source_label}). {row.fit.reason}".strip())
    return 0


def _use_or_say_how(settings: Settings, paths: AppPaths, key: str, *, use: bool) -> int:
    """After a download: make ``key`` the research model, or say how to."""
    if use:
        return _make_used(settings, paths, key)
    print(f"Make it the research model: fathom models use {key}")
    return 0


def _use(args: argparse.Namespace) -> int:
    settings, paths = _context()
    return _make_used(settings, paths, args.id)


def _remove(args: argparse.Namespace) -> int:
    from app.core.settings import save_settings
    from app.model_files.model_inventory import (
        delete_model_file,
        find_row,
        removable_file,
        settings_without,
    )

    settings, paths = _context()
    rows = collect_rows(settings, paths)
    row = find_row(rows, args.id)
    if row.source == "ollama":
        from app.model_files.ollama_admin import delete_ollama_model

        asyncio.run(delete_ollama_model(settings.model.ollama.host, row.ollama_tag))
        print(f"Ollama deleted {row.ollama_tag}.")
    else:
        path = removable_file(row, paths)
        delete_model_file(path)
        print(f"Deleted {path}.")
    changed = settings_without(row, settings)
    if changed is not settings:
        save_settings(changed, paths.settings_file)
        print(
            "It was the research model; Fathom now chooses one automatically (`fathom models use KEY`)."
        )
    return 0
