"""``fathom ingest PATH… [--collection NAME]``: add files and folders to a collection
(named after the first folder when no name is given, as the window names it).

A progress bar on a terminal (stderr), one line per file otherwise; a summary
of indexed / unchanged / skipped / failed files with reasons at the end. The
exit status is non-zero only when nothing could be indexed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from app.commands.ingest_progress import Display, follow, summary
from app.commands.library_access import open_library, resolve_names
from app.commands.terminal import run_until_interrupted
from app.core import collection_names

if TYPE_CHECKING:
    from app.ingest.library import Library


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to add")
    parser.add_argument(
        "--collection",
        "-c",
        metavar="NAME",
        help="collection to add them to (default: named after the first folder, as the window names it)",
    )
    parser.add_argument(
        "--description", metavar="TEXT", help="what the collection holds (used to route questions)"
    )
    parser.add_argument(
        "--describe",
        action="store_true",
        help="have the model write the description from a sample of chunks",
    )
    parser.add_argument(
        "--retry",
        action="store_true",
        help="read again the files the converter gave up on before (past the memory or time per file, or "
        "crashing it); otherwise they are not read again until they change",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary")
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="index a home folder, a disk's root or more than 3,000 files without asking",
    )


def run(args: argparse.Namespace) -> int:
    return run_until_interrupted(
        _run(args), "Stopped. What was indexed is kept; run the same command again to continue."
    )


async def _run(args: argparse.Namespace) -> int:
    from app.core.errors import FathomError

    err = sys.stderr
    paths = [Path(p) for p in args.paths]
    if not args.yes and not _all_of_it_wanted(paths, err):
        return 1
    library = open_library(err)
    if library is None:
        return 2
    try:
        given = args.collection or collection_names.name_for(paths)
        (collection,) = await resolve_names(library, [given])
        existed = any(c.name == collection for c in await library.collections())
        if not args.collection:
            print(f"Collection: {collection} (name another with --collection NAME)", file=err)
        try:
            events = library.ingest(
                paths, collection, description=args.description, retry=args.retry
            )
            finished, done = await follow(events, Display(err, quiet=args.quiet))
        except FathomError as exc:
            print(str(exc), file=err)
            return 2
        nothing = finished is None or finished.indexed + finished.unchanged == 0
        if nothing and not existed:  # a new collection that nothing went into is not kept
            await _drop_if_empty(library, collection)
        if finished is None:
            return 1
        print(summary(collection, finished, done), file=err)
        if args.describe and finished.indexed + finished.unchanged > 0:
            await _describe(library, collection, err)
    finally:
        await library.aclose()
    return 0 if finished.indexed + finished.unchanged > 0 else 1


def _all_of_it_wanted(paths: list[Path], err: TextIO) -> bool:
    """As the window does: a home folder, a disk's root or thousands of files are indexed
    only when the user says so (asked on a terminal; elsewhere ``--yes``)."""
    from app.ingest.folder_size import drop_size

    size = drop_size([p for p in paths if p.exists()])
    if not size.worth_asking:
        return True
    question = f"Index {size.what(paths)}? It holds {size.said()}; that can take hours."
    if sys.stdin.isatty():
        try:
            answer = input(f"{question} [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return True
    print(
        f"{question} Not indexed: add --yes to index all of it, or give its folders one by one.",
        file=err,
    )
    return False


async def _drop_if_empty(library: Library, collection: str) -> None:
    from app.core.errors import FathomError

    try:
        found = await library.collection(collection)
        if found.documents == 0 and found.chunks == 0:
            await library.remove_collection(collection)
    except FathomError:
        pass  # never made, or already gone


async def _describe(library: Library, collection: str, err: TextIO) -> None:
    from app.core.errors import FathomError

    try:
        from app.llm.factory import make_chat_model

        model = make_chat_model(library.settings)
    except (FathomError, ImportError) as exc:
        print(f"No description written: {exc}", file=err)
        return
    try:
        text = await library.write_description(collection, model)
        print(f"Description: {text}", file=err)
    except FathomError as exc:
        print(f"No description written: {exc}", file=err)
    finally:
        await model.aclose()
