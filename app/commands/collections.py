"""``fathom collections``: the collections, their size and embedding model."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from app.commands.library_access import open_catalog_read_only

    # read-only, without the data dir's lock: this works while a window has the library open
    catalog, readable = open_catalog_read_only(sys.stderr)
    if not readable:
        return 2
    try:
        collections = await asyncio.to_thread(catalog.collections) if catalog is not None else []
    finally:
        if catalog is not None:
            catalog.close()
    if args.json:
        json.dump(
            [dataclasses.asdict(c) for c in collections], sys.stdout, ensure_ascii=False, indent=2
        )
        sys.stdout.write("\n")
        return 0
    if not collections:
        print(
            "No collections yet. Add documents with: fathom ingest PATH --collection NAME",
            file=sys.stderr,
        )
        return 0
    rows = [
        (
            c.name,
            str(c.documents),
            str(c.chunks),
            c.embedding_model,
            " ".join(c.description.split()),
        )
        for c in collections
    ]
    print(format_table(("NAME", "DOCUMENTS", "CHUNKS", "EMBEDDING MODEL", "DESCRIPTION"), rows))
    return 0


def format_table(
    header: tuple[str, ...], rows: Sequence[tuple[str, ...]], last_max: int = 60
) -> str:
    """Left-aligned columns (numbers right-aligned); the last column cut to ``last_max``."""
    cut_rows = [
        (*r[:-1], r[-1] if len(r[-1]) <= last_max else r[-1][: last_max - 1] + "…") for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *cut_rows, strict=True)]
    numeric = [all(r[i].isdigit() for r in cut_rows) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        parts = [
            c.rjust(w) if numeric[i] else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), *(line(r) for r in cut_rows)])
