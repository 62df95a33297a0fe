"""``fathom show RUN_ID``: print one past research run (its report under its header
"N of M sentences cited, K flagged", or why it failed).

Events of the run that cannot be read (damaged, or written by another
version) are skipped, and the output says how many.
"""

from __future__ import annotations

import argparse
import json
import sys

from app.commands.library_access import add_run_id_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_id_argument(parser)
    parser.add_argument(
        "--json", action="store_true", help="print the run with all its events as JSON"
    )


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from app.commands.library_access import open_history_read_only
    from app.core.codec import to_jsonable
    from app.core.events import event_to_dict
    from app.research.budget import describe_stop
    from app.research.citations import sentence_support, support_headline
    from app.research.provenance import STARTER_HEADER, describe

    store, readable = open_history_read_only(sys.stderr)  # read-only: works while a window is open
    if not readable:
        return 2
    if store is None:
        print(f"No research run '{args.run_id}'. List runs with `fathom history`.", file=sys.stderr)
        return 1
    try:
        summary = store.get_run(args.run_id)
        if summary is None:
            print(
                f"No research run '{args.run_id}'. List runs with `fathom history`.",
                file=sys.stderr,
            )
            return 1
        stored = store.read_events(summary.run_id)
        report = store.load_report(summary.run_id)
        thread = _thread(store, summary.run_id)  # a run with follow-ups: the whole thread
        if args.json:
            out = dataclasses.asdict(summary)
            out["evidence"] = [to_jsonable(e) for e in store.load_evidence(summary.run_id)]
            out["events"] = [event_to_dict(e) for e in stored.events]
            out["skipped_events"] = [dataclasses.asdict(s) for s in stored.skipped]
            out["note"] = stored.note
            json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
            sys.stdout.write("\n")
            return 0
    finally:
        store.close()
    print(f"# {thread[0] if thread else summary.question}\n")
    facts = [f"run {summary.run_id}", f"mode {summary.mode}", f"status {summary.status}"]
    if summary.model:
        facts.append(f"model {summary.model}")
    facts.append(
        f"{summary.total_tokens} tokens, {summary.calls} model calls, {summary.elapsed_s:.1f} s"
    )
    print("*" + " · ".join(facts) + "*\n")
    if stored.note:
        print(f"*Note: {stored.note}*\n")
    if summary.status == "failed":
        print(f"The run failed: {summary.message}")
        return 0
    if summary.stop_reason and summary.stop_reason != "completed":
        print(f"*{describe_stop(summary.stop_reason)}*\n")
    if thread:
        print(f"*{support_headline(sentence_support(thread[1]))}*\n")
        print(thread[1])
        return 0
    if not summary.report_markdown:
        print("(no report was written)")
        return 0
    # the report's own count of cited and flagged sentences, or one made the same way
    support = report.support if report is not None else None
    citations = report.citations if report is not None else ()
    provenance = report.provenance if report is not None else None
    if provenance is not None and provenance.starter:
        print(f"*{STARTER_HEADER}*\n")
    print(
        f"*{support_headline(support or sentence_support(summary.report_markdown, citations))}*\n"
    )
    print(summary.report_markdown)
    if provenance is not None:
        print("## Provenance\n")
        print("\n".join(f"- {line}" for line in describe(provenance)))
    return 0


def _thread(store: object, run_id: str) -> tuple[str, str] | None:
    """The thread ``run_id`` belongs to, when it has follow-ups: its first question and
    its answers as one report (None when it has none)."""
    from app.research.follow_up import thread_markdown, thread_steps
    from app.store.research_runs import RunStore

    assert isinstance(store, RunStore)
    steps = thread_steps(store, run_id)
    return (steps[0][0], thread_markdown(steps)) if len(steps) > 1 else None
