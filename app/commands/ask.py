"""``fathom ask QUESTION``: research a question; progress on stderr, the report on stdout
(under its support header, "N of M sentences cited, K flagged").

``fathom ask --follow-up RUN_ID QUESTION`` asks a follow-up question of that run's
thread (:mod:`app.research.follow_up`): it prints the new section, and is recorded in
the thread (``fathom show`` of any of its runs prints the whole thread)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.research.modes import USER_MODES
from app.research.run_options import RunOptions

if TYPE_CHECKING:
    from app.core.models import Budget
    from app.core.settings import ResearchSettings

# The tiny starter model loops on long outputs: keep its report short.
STARTER_OPTIONS = RunOptions(report_max_tokens=400)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="what you want to find out")
    parser.add_argument(
        "--mode",
        choices=USER_MODES,
        default=None,
        help="research mode (default: from settings, deep)",
    )
    parser.add_argument(
        "--collection",
        "-c",
        dest="collections",
        action="append",
        metavar="NAME",
        default=[],
        help="search only this collection; repeat for several (default: all)",
    )
    parser.add_argument(
        "--max-rounds", type=int, default=None, metavar="N", help="research rounds at most"
    )
    parser.add_argument(
        "--subqueries",
        type=int,
        default=None,
        metavar="N",
        help="sub-queries per round at most (as in the window)",
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="N",
        help="chunks retrieved per search (as in the window)",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=None, metavar="S", help="wall-time budget"
    )
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N", help="token budget")
    parser.add_argument(
        "--json", action="store_true", help="print the whole run (events, evidence) as JSON"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--follow-up",
        dest="follow_up",
        default=None,
        metavar="RUN_ID",
        help=(
            "ask a follow-up question of that run (from `fathom history`; a unique prefix "
            "is enough; `last`: the latest run)"
        ),
    )
    parser.add_argument(
        "--table-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="table mode: also save the table (.csv or .json)",
    )


def run(args: argparse.Namespace) -> int:
    if args.table_out is not None and args.table_out.suffix.lower() not in (".csv", ".json"):
        print(
            f"Cannot save a table as {args.table_out.name}: use a .csv or .json file name.",
            file=sys.stderr,
        )
        return 2
    try:
        return asyncio.run(_ask(args))
    except KeyboardInterrupt:
        print("Stopped. What was found so far is saved; see `fathom history`.", file=sys.stderr)
        return 130


def run_budget(args: argparse.Namespace, research: ResearchSettings) -> Budget:
    """The run's budget from ``fathom ask``'s options and the settings, by the window's rule
    (:func:`app.research.budget.budget_from`)."""
    from app.research.budget import budget_from

    return budget_from(
        research,
        max_rounds=args.max_rounds,
        max_subqueries=args.subqueries,
        max_tokens=args.max_tokens,
        max_seconds=args.max_seconds,
        top_k=args.top_k,
    )


async def _ask(args: argparse.Namespace) -> int:
    import dataclasses

    from app.commands.library_access import resolve_names
    from app.core.codec import to_jsonable
    from app.core.collection_names import no_such_collection
    from app.core.errors import FathomError
    from app.core.events import Failed, Finished, event_to_dict
    from app.core.models import Scope
    from app.core.paths import app_paths
    from app.core.settings import load_settings
    from app.ingest.library import Library
    from app.llm.factory import make_chat_model_async, starter_notice
    from app.research.engine import EMPTY_QUESTION, ResearchEngine, empty_scope_problem
    from app.store.research_runs import RunStore

    err = sys.stderr
    paths = app_paths().ensure()
    settings, problem = load_settings(paths.settings_file)
    if problem:
        print(problem, file=err)
    research = settings.research
    budget = run_budget(args, research)
    for flag, value in (
        ("--max-rounds", budget.max_rounds),
        ("--subqueries", budget.max_subqueries),
    ):
        if value < 1:
            print(f"{flag} must be at least 1.", file=err)
            return 2
    if budget.top_k < 1:
        print("--top-k must be at least 1.", file=err)
        return 2
    if not args.question.strip():  # said before any model loads, and no run is saved
        print(EMPTY_QUESTION, file=err)
        return 2
    mode = args.mode or research.mode
    scope = Scope(collections=tuple(args.collections))
    prior = None
    if args.follow_up is not None:  # before the library and the model: a wrong id costs nothing
        try:
            prior, followed = _prior(args.follow_up)
        except FathomError as exc:
            print(str(exc), file=err)
            return 2
        scope = scope if args.collections else Scope(collections=followed)
    try:
        library = Library.open(settings, paths)
    except FathomError as exc:
        print(str(exc), file=err)
        return 2
    model = None
    runs: RunStore | None = None
    events: list[dict[str, Any]] = []
    final: Finished | Failed | None = None
    progress = Progress(err, quiet=args.quiet)
    try:
        # what to search is checked before the model loads: an empty library costs nothing
        known = {c.name for c in await library.collections()}
        args.collections = await resolve_names(
            library, args.collections
        )  # "milvus-docs" is milvus_docs
        if args.collections:
            scope = Scope(collections=tuple(args.collections))
        unknown = [c for c in args.collections if c not in known]
        if unknown:
            print(
                f"{no_such_collection(unknown, known)} "
                "Add documents with `fathom ingest PATH --collection NAME`.",
                file=err,
            )
            return 2
        empty = await empty_scope_problem(library, scope)
        if empty:
            print(
                f"Add documents first: {empty} Add some with `fathom ingest PATH --collection NAME`.",
                file=err,
            )
            return 2
        try:
            model = await make_chat_model_async(settings)
        except FathomError as exc:
            print(f"No model: {exc}", file=err)
            return 2
        options = RunOptions()
        notice = starter_notice(model)
        if notice:
            print(notice, file=err)
            options = STARTER_OPTIONS
        runs = RunStore.open(paths)
        engine = ResearchEngine(model, library, runs)
        stream = engine.run(
            args.question, mode=mode, scope=scope, budget=budget, options=options, follow_up=prior
        )
        async for event in stream:
            progress.show(event)
            if args.json:
                events.append(event_to_dict(event))
            if isinstance(event, (Finished, Failed)):
                final = event
    finally:
        if runs is not None:
            runs.close()
        await library.aclose()
        if model is not None:
            await model.aclose()
    if final is None:
        return 1
    if args.json:
        out: dict[str, Any] = {"run_id": final.run_id, "question": args.question, "mode": mode}
        if isinstance(final, Finished):
            out.update(
                status="finished",
                stop_reason=final.stop_reason,
                report=to_jsonable(final.report),
                usage=dataclasses.asdict(final.usage),
            )
        else:
            out.update(
                status="failed", message=final.message, usage=dataclasses.asdict(final.usage)
            )
        out["events"] = events
        json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif isinstance(final, Finished):
        sys.stdout.write(_header(final.report, args.question if prior is not None else ""))
        sys.stdout.write(final.report.markdown)
        if not final.report.markdown.endswith("\n"):
            sys.stdout.write("\n")
    if isinstance(final, Failed):
        print(f"The run failed: {final.message}", file=err)
        return 1
    if args.table_out is not None:
        return _save_table(final, args.table_out, err)
    return 0


def _prior(run_id: str) -> tuple[Any, tuple[str, ...]]:
    """What a follow-up of ``run_id`` starts from, and the collections that run searched;
    FollowUpError (a FathomError) says why there is none."""
    from app.core.paths import app_paths
    from app.research.follow_up import load_prior
    from app.store.research_runs import RunStore

    store = RunStore.open(app_paths())
    try:
        prior = load_prior(store, run_id)
        followed = store.get_run(prior.run_id)
        return prior, followed.collections if followed is not None else ()
    finally:
        store.close()


def _header(report: Any, follow_up: str) -> str:
    """Above the printed report: a follow-up's section heading, and the support header."""
    from app.research.citations import sentence_support, support_headline
    from app.research.follow_up import section_heading

    support = report.support or sentence_support(report.markdown, report.citations)
    heading = f"{section_heading(follow_up)}\n\n" if follow_up else ""
    return f"{heading}*{support_headline(support)}*\n\n"


def _save_table(final: Any, path: Path, err: Any) -> int:
    from app.research.entity_table import write_table

    if final.report.table is None:
        print("No table to save: --table-out needs --mode table.", file=err)
        return 2
    write_table(final.report.table, path)
    print(f"Table saved to {path}", file=err)
    return 0


class Progress:
    """One line per step of the run on stderr: what it is doing (a line each time it
    starts a new phase: the window's status line, without its counts), sub-queries,
    chunks found, tokens."""

    def __init__(self, stream: TextIO, *, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet
        self.evidence = 0
        self.tokens = 0
        self.queries: dict[str, str] = {}
        self.phase = ""  # the last phase line printed

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def show(self, event: Any) -> None:
        from app.core.events import (
            EvidenceAdded,
            Failed,
            Finished,
            Notice,
            PhaseChanged,
            PlanWritten,
            Reflected,
            RoundStarted,
            RunStarted,
            SearchFinished,
            StepFinished,
            SubQueryPlanned,
            UsageUpdated,
        )
        from app.research.budget import describe_stop

        if isinstance(event, RunStarted):
            where = ", ".join(event.collections) or "all collections"
            self.say(
                f"Researching ({event.mode}, {event.model or 'model'}) over {where}: {event.question}"
            )
        elif isinstance(event, PhaseChanged):
            # a phase starts (its updates are not printed)
            if event.done == 0 and event.text != self.phase:
                self.phase = event.text
                self.say(f"… {event.text}")
        elif isinstance(event, RoundStarted):
            self.say(f"Round {event.round_no}")
        elif isinstance(event, PlanWritten):
            self.say("Plan:\n" + "\n".join(f"  {i}. {s}" for i, s in enumerate(event.steps, 1)))
        elif isinstance(event, SubQueryPlanned):
            self.queries[event.node_id] = event.text
            label = (
                f"search ({event.origin})"
                if event.origin in ("gap", "bridge", "name")
                else "search"
            )
            self.say(f"  {label}: {event.text}")
        elif isinstance(event, SearchFinished):
            text = self.queries.get(event.node_id, "")
            self.say(f"    {len(event.hits)} chunks for: {text[:70]}")
        elif isinstance(event, EvidenceAdded):
            self.evidence += 1
        elif isinstance(event, Reflected):
            if event.done:
                self.say(f"  enough evidence ({self.evidence} sources, {self.tokens} tokens)")
            else:
                self.say(
                    f"  gaps: {'; '.join(event.gap_queries)} ({self.evidence} sources, {self.tokens} tokens)"
                )
        elif isinstance(event, StepFinished):
            self.say(f"  step done{' (answered)' if event.answered else ''}: {event.finding[:100]}")
        elif isinstance(event, Notice):
            if event.level == "warning":
                self.say(f"  ! {event.message}")
        elif isinstance(event, UsageUpdated):
            self.tokens = event.total.total_tokens
        elif isinstance(event, Finished):
            self.say(
                f"Done in {event.elapsed_s:.1f} s: {describe_stop(event.stop_reason)} "
                f"{len(event.report.evidence)} sources, {event.usage.calls} model calls, "
                f"{event.usage.total_tokens} tokens. Run id: {event.run_id}"
            )
        elif isinstance(event, Failed):
            self.say(f"Failed after {event.elapsed_s:.1f} s. Run id: {event.run_id}")
