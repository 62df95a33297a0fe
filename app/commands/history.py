"""``fathom history``: list past research runs, newest first; a run and its follow-up
questions are one line (a thread: its latest run, with its follow-ups counted)."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--limit", type=int, default=20, metavar="N", help="how many runs (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print as JSON")


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import time

    from app.commands.library_access import open_history_read_only

    store, readable = open_history_read_only(sys.stderr)  # read-only: works while a window is open
    if not readable:
        return 2
    try:
        runs = store.list_threads(limit=max(1, args.limit)) if store is not None else []
    finally:
        if store is not None:
            store.close()
    if args.json:
        json.dump([dataclasses.asdict(r) for r in runs], sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    if not runs:
        print("No research runs yet. Ask something with `fathom ask QUESTION`.")
        return 0
    print(f"{'RUN ID':<23} {'STARTED':<16} {'MODE':<6} {'STATUS':<18} {'TOKENS':>7}  QUESTION")
    for r in runs:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at))
        status = (
            r.status
            if r.status != "finished" or r.stop_reason == "completed"
            else f"stopped:{r.stop_reason}"
        )
        question = r.thread_question or r.question
        question = question if len(question) <= 60 else question[:59] + "…"
        if r.follow_ups:
            question += f" (+{r.follow_ups} follow-up{'' if r.follow_ups == 1 else 's'})"
        print(
            f"{r.run_id:<23} {started:<16} {r.mode:<6} {status:<18} {r.total_tokens:>7}  {question}"
        )
    return 0
