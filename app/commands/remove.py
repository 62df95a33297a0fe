"""``fathom remove --collection NAME [--document PATH]``: forget a collection or some documents."""

from __future__ import annotations

import argparse
import asyncio
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--collection", "-c", required=True, metavar="NAME", help="the collection")
    parser.add_argument(
        "--document",
        "-d",
        action="append",
        metavar="PATH",
        help="remove only this file, or the files under this folder (repeatable)",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.commands.library_access import open_library, resolve_names
    from app.commands.terminal import short_path
    from app.core.errors import FathomError

    err = sys.stderr
    library = open_library(err)
    if library is None:
        return 2
    try:
        (name,) = await resolve_names(library, [args.collection])
        collection = await library.collection(name)
        if not args.document:
            question = (
                f"Remove collection '{collection.name}' ({collection.documents} documents, "
                f"{collection.chunks} chunks)? The files themselves are not touched."
            )
            if not args.yes and not _confirm(question):
                print("Not removed (confirm with --yes).", file=err)
                return 1
            await library.remove_collection(collection.name)
            print(f"Removed collection '{collection.name}'.", file=err)
            return 0
        targets = []
        for given in args.document:
            found = await library.find_documents(collection.name, Path(given))
            if not found:
                print(f"Collection '{collection.name}' has no document at {given}.", file=err)
            targets.extend(found)
        if not targets:
            return 1
        question = f"Remove {len(targets)} document(s) from '{collection.name}'?"
        if not args.yes and not _confirm(question):
            print("Not removed (confirm with --yes).", file=err)
            return 1
        for doc in targets:
            await library.remove_document(collection.name, doc.doc_id)
            print(f"Removed {short_path(doc.path)}.", file=err)
        return 0
    except FathomError as exc:
        print(str(exc), file=err)
        return 2
    finally:
        await library.aclose()
