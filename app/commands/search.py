"""``fathom search QUERY… --collection NAME``: ranked chunks with their source files.

Several queries are embedded and searched in one batch (one library open);
their results are printed one query after another.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.core.models import Hit

EXCERPT_CHARS = 320


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "queries", nargs="+", metavar="QUERY", help="what to look for (several: one search each)"
    )
    parser.add_argument(
        "--collection",
        "-c",
        action="append",
        metavar="NAME",
        help="collection to search (repeat for several; default: all)",
    )
    parser.add_argument(
        "--mode", choices=("hybrid", "dense", "bm25"), default="hybrid", help="default: hybrid"
    )
    parser.add_argument(
        "--top-k", "-k", type=int, default=8, metavar="N", help="how many chunks (default 8)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from app.commands.library_access import open_library, resolve_names
    from app.commands.terminal import short_path
    from app.core.errors import FathomError

    if args.top_k < 1:
        print("--top-k must be at least 1.", file=sys.stderr)
        return 2
    if not all(query.strip() for query in args.queries):
        print(
            'A query is empty: give the words to look for, e.g. fathom search "create a partition".',
            file=sys.stderr,
        )
        return 2
    library = open_library(sys.stderr, search_only=True)
    if library is None:
        return 2
    try:
        names = await resolve_names(library, args.collection) if args.collection else None
        results = await library.search(
            args.queries, collections=names, mode=args.mode, top_k=args.top_k
        )
    except FathomError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    finally:
        await library.aclose()
    if args.json:
        listed = [[_hit_json(rank, hit) for rank, hit in enumerate(hits, 1)] for hits in results]
        out: Any = (
            listed[0]
            if len(listed) == 1
            else [{"query": q, "hits": hits} for q, hits in zip(args.queries, listed, strict=True)]
        )
        json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    for query, hits in zip(args.queries, results, strict=True):
        if len(results) > 1:
            print(f"## {query}\n")
        _print_hits(hits, short_path)
    return 0


def _hit_json(rank: int, hit: Hit) -> dict[str, Any]:
    return {
        "rank": rank,
        "score": hit.score,
        "chunk_id": hit.chunk.chunk_id,
        "collection": hit.chunk.collection,
        "path": hit.chunk.path,
        "title": hit.chunk.title,
        "page": hit.chunk.page,
        "headings": list(hit.chunk.headings),
        "text": hit.chunk.text,
    }


def _print_hits(hits: list[Hit], short_path: Callable[[str], str]) -> None:
    if not hits:
        print("No matching chunks.", file=sys.stderr)
        return
    for rank, hit in enumerate(hits, 1):
        chunk = hit.chunk
        where = short_path(chunk.path)
        if chunk.page is not None:
            where += f", page {chunk.page}"
        print(f"{rank}. [{hit.score:.4f}] {where}")
        if chunk.headings:
            print(f"   {chunk.heading_path}")
        text = " ".join(chunk.text.split())
        excerpt = text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"
        print(f"   {excerpt}")
        print()
