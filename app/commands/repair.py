"""``fathom repair [--json] [--check]``: compare the catalog with the search index and fix drift.

For every document the catalog lists, its chunk ids in Milvus are compared
with the ones it should have. Missing chunks are embedded again (the file is
converted anew), chunks of no listed document and stray collections are
deleted, half-finished work is finished. On a consistent library it says so.
Exit status: 0 when the library is consistent at the end, 1 when drift
remains, 2 when the library could not be opened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.core.events import IngestEvent
    from app.store.consistency import CheckResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="only report what is wrong; change nothing"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from app.commands.library_access import open_library
    from app.commands.terminal import short_path
    from app.core.errors import FathomError
    from app.core.events import FileDone

    err = sys.stderr
    library = open_library(err)
    if library is None:
        return 2

    def show(event: IngestEvent) -> None:
        if isinstance(event, FileDone) and not args.json:
            print(f"{event.status:9} {short_path(event.path)}", file=err, flush=True)

    try:
        if args.check:
            before = after = await library.check()
        else:
            before, after = await library.repair(on_event=show)
    except FathomError as exc:
        print(str(exc), file=err)
        return 2
    finally:
        await library.aclose()
    recovered = library.recovery.summary()
    if args.json:
        out = {
            "recovered_at_open": recovered,
            "found": before.to_json(),
            "after": after.to_json(),
            "fixed": not args.check and not before.consistent,
            "consistent": after.consistent,
        }
        json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0 if after.consistent else 1
    _report(before, after, checked_only=args.check)
    return 0 if after.consistent else 1


def _report(before: CheckResult, after: CheckResult, *, checked_only: bool) -> None:
    if before.consistent:
        print(before.summary())
        return
    print(before.summary())
    for drift in before.drift:
        print(f"- {drift.sentence()}")
    if checked_only:
        print("Run `fathom repair` to fix these.")
        return
    if after.consistent:
        print(f"Repaired. {after.summary()}")
        return
    print("Some problems remain:")
    for drift in after.drift:
        print(f"- {drift.sentence()}")
