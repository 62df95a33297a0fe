"""``fathom reindex --collection NAME``: embed a collection again with the current embedding model.

A collection remembers the embedding model it was built with; after the model
changes in Settings, searching it is refused until it is re-indexed. This
empties its search index and converts and embeds its folders and files again.
Interrupted, run it again (or `fathom ingest` the same folders) to go on.
"""

from __future__ import annotations

import argparse
import sys

from app.commands.terminal import run_until_interrupted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collection", "-c", required=True, metavar="NAME", help="the collection to re-index"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary")


def run(args: argparse.Namespace) -> int:
    return run_until_interrupted(_run(args), "Stopped. Run the same command again to continue.")


async def _run(args: argparse.Namespace) -> int:
    from app.commands.ingest_progress import Display, follow, summary
    from app.commands.library_access import open_library, resolve_names
    from app.core.errors import FathomError

    err = sys.stderr
    library = open_library(err)
    if library is None:
        return 2
    try:
        (args.collection,) = await resolve_names(library, [args.collection])
        finished, done = await follow(
            library.reindex(args.collection), Display(err, quiet=args.quiet)
        )
    except FathomError as exc:
        print(str(exc), file=err)
        return 2
    finally:
        await library.aclose()
    if finished is None:
        return 1
    print(summary(args.collection, finished, done), file=err)
    return 0 if finished.indexed + finished.unchanged > 0 else 1
