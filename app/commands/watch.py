"""``fathom watch [--collection NAME …] [--on | --off]``: keep collections in step with their folders,
without the window.

It first re-scans each collection (what changed while nothing watched), then
re-scans a collection each time its folders settle after a change: new, changed,
renamed and deleted files, as ``fathom ingest`` would. A folder that is not there
(an unplugged drive) keeps its documents and is picked up when it is back (said once
when it goes, once when it is back). A re-scan that fails is said for its collection,
and the others go on being watched (that one too: it is tried again on its next
change). Ctrl+C
stops after the re-scan in progress; a second Ctrl+C stops at once (an ingest cut
short is finished by the next run). For a server or a terminal left open.
Without ``--collection`` it watches every collection marked watched (all, unless
``--off`` turned one off).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from app.commands.terminal import run_until_interrupted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collection",
        "-c",
        action="append",
        metavar="NAME",
        help="a collection to watch (default: all of them)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print only a line per re-scan")
    switch = parser.add_mutually_exclusive_group()
    switch.add_argument(
        "--on", action="store_true", help="mark the --collection(s) watched (the default) and exit"
    )
    switch.add_argument(
        "--off", action="store_true", help="stop following the --collection(s)' folders and exit"
    )


def run(args: argparse.Namespace) -> int:
    return run_until_interrupted(
        _run(args), "Stopped at once. The next `fathom watch` or ingest finishes the work."
    )


async def _run(args: argparse.Namespace) -> int:
    from app.commands.library_access import open_library, resolve_names
    from app.commands.watch_report import WatchReport
    from app.core.errors import FathomError
    from app.ingest.watch_loop import keep_in_step

    err = sys.stderr
    library = open_library(err)
    if library is None:
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def first_interrupt() -> None:
        print(
            "\nStopping after the re-scan in progress (Ctrl+C again to stop at once)…",
            file=err,
            flush=True,
        )
        stop.set()
        loop.remove_signal_handler(signal.SIGINT)  # the second one interrupts

    try:
        loop.add_signal_handler(signal.SIGINT, first_interrupt)
        args.collection = await resolve_names(library, args.collection or [])
        if args.on or args.off:
            if not args.collection:
                print("Say which collection: --collection NAME (repeat for several).", file=err)
                return 2
            for name in args.collection:
                await library.set_watched(name, args.on)
                print(f"{name}: {'watched' if args.on else 'not watched'}.", file=err)
            return 0
        names = args.collection or [c.name for c in await library.collections() if c.watched]
        for name in names:
            await library.collection(name)  # a clear error for a name that does not exist
        if not names:
            print(
                "There are no watched collections: add a folder with `fathom ingest`, "
                "or turn one on with `fathom watch --on -c NAME`.",
                file=err,
            )
            return 1
        print(f"Watching {', '.join(names)}. Ctrl+C stops.", file=err, flush=True)
        report = WatchReport(err, quiet=args.quiet)
        await keep_in_step(library, names, report.show, stop, on_failed=report.failed)
    except FathomError as exc:
        print(str(exc), file=err)
        return 2
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await library.aclose()
    print("Stopped watching.", file=err)
    return 0
