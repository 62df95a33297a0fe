"""RunContext: what a research mode sees of its run.

A mode (``app/research/modes/<name>.py``) gets one ``RunContext`` and talks to
the model, the library and the event stream only through it. The context is
made of the run's parts, each in its own module, and hands them out:

* events and node ids (``emit``, ``new_node_id``, ``notice``):
  :class:`~app.research.run_events.RunEvents`;
* budgets and what was spent (``check_budget``, ``start_round``,
  ``cap_subqueries``, ``stop``, ``tracker``, ``usage``, ``stop_reason``):
  :class:`~app.research.budget.RunAccount`; a budget that runs out raises
  :class:`~app.research.budget.BudgetHit` with its name;
* model calls (``call_structured``, ``call_text``, ``stream_text``):
  :class:`~app.research.model_calls.ModelCalls`;
* the evidence table, numbered ``[n]`` (``evidence``, ``add_evidence``):
  :class:`~app.research.evidence.EvidenceRegistry`;
* the report (``write_report``, ``partial_report``), shared by all modes:
  :class:`~app.research.report.ReportWriter`.

A follow-up (``prior``, :mod:`app.research.follow_up`) starts with its thread's
evidence, numbered as before (``take_up_prior``); a mode's first planning prompt
adds ``earlier_prompt()`` (the earlier questions and answers, fenced), seeds its
repeat filter with ``searched_before()`` and may search ``follow_up_queries()``.

Searching the library is the context's own (``collections``, ``plan_subquery``,
``search``): all sub-queries of a round in one batched call, counted against
``max_search_calls``, one ``SearchFinished`` each.

``options`` (:class:`~app.research.run_options.RunOptions`, from
``ResearchEngine.run(options=...)``): each option with its default and description.

A typical mode::

    async def run_mode(ctx: RunContext) -> Report:
        try:
            ...  # rounds of ctx.start_round(), ctx.search(...), ctx.call_structured(...)
        except BudgetHit as hit:
            ctx.stop(hit.budget)
        return await ctx.write_report()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core.events import (
    ROOT_NODE,
    EvidenceAdded,
    ResearchEvent,
    RoundStarted,
    SearchFinished,
    SubQueryOrigin,
    SubQueryPlanned,
)
from app.core.models import Budget, Chunk, Collection, Evidence, Hit, Report, Scope, SubQuery, Usage
from app.ingest.library import Library
from app.llm.base import ChatModel
from app.llm.starter import is_starter
from app.research import follow_up
from app.research.budget import BudgetTracker, RunAccount
from app.research.evidence import EvidenceRegistry
from app.research.model_calls import ModelCalls
from app.research.report import ReportWriter
from app.research.run_events import RunEvents
from app.research.run_options import RunOptions
from app.research.snippets import FULL_VIEW, SourceView
from app.store.vectors import SearchMode

T = TypeVar("T")


@dataclass(frozen=True)
class SearchRequest:
    """One sub-query to search; empty ``collections`` means the run's scope."""

    node_id: str
    text: str
    collections: tuple[str, ...] = ()


class RunContext:
    """The state and services of one research run (see the module docstring)."""

    def __init__(
        self,
        *,
        question: str,
        mode: str,
        model: ChatModel,
        library: Library,
        run_id: str,
        emit: Callable[[ResearchEvent], None],
        scope: Scope | None = None,
        budget: Budget | None = None,
        options: RunOptions | Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        prior: follow_up.Prior | None = None,
    ) -> None:
        self.question = question
        self.prior = prior
        self.mode = mode
        self.scope = scope or Scope()
        self.budget = budget or Budget()
        self.model = model
        self.library = library
        self.run_id = run_id
        self.options = RunOptions.of(options)
        self.prompt_chars = self.options.prompt_chars
        self.events = RunEvents(run_id, emit)
        self.account = RunAccount(
            BudgetTracker(self.budget, clock, report_share=self.options.report_share)
        )
        self.calls = ModelCalls(model, self.account, self.events)
        self.evidence = EvidenceRegistry()
        self.report = ReportWriter(
            question,
            self.evidence,
            self.calls,
            self.events,
            self.account,
            options=self.options,
            embed=library.embed,
            # the research model's verdict is one more vote, unless it is the starter (a 135M
            # model passes nearly every claim); options.model_votes decides for benchmarks
            model_votes=not is_starter(model)
            if self.options.model_votes is None
            else self.options.model_votes,
            earlier_answers=follow_up.earlier_block(prior) if prior is not None else "",
        )
        self.open_questions: list[str] = []
        self.source_view: SourceView = (
            FULL_VIEW  # how much evidence the report writer sees; a mode may narrow it
        )
        self._collections: list[Collection] | None = None
        # the parts' services, under the names modes use
        self.emit = self.events.emit
        self.new_node_id = self.events.new_node_id
        self.notice = self.events.notice
        self.check_budget = self.account.check
        self.stop = self.account.stop
        self.call_structured = self.calls.call_structured
        self.call_text = self.calls.call_text
        self.stream_text = self.calls.stream_text

    # -- what the run has spent -----------------------------------------------

    @property
    def tracker(self) -> BudgetTracker:
        return self.account.tracker

    @property
    def usage(self) -> Usage:
        return self.account.usage

    @property
    def stop_reason(self) -> str | None:
        return self.account.stop_reason

    def start_round(self, parent_id: str = ROOT_NODE) -> tuple[str, int]:
        """Begin a round: ``(node_id, round_no)``; raises BudgetHit("max_rounds") when none is left."""
        round_no = self.tracker.start_round()
        node_id = self.new_node_id("round")
        self.emit(
            RoundStarted(
                run_id=self.run_id, node_id=node_id, round_no=round_no, parent_id=parent_id
            )
        )
        return node_id, round_no

    def cap_subqueries(self, queries: Sequence[T]) -> list[T]:
        """At most ``max_subqueries`` of ``queries`` (a per-round cap)."""
        return list(queries[: max(1, self.budget.max_subqueries)])

    # -- library ------------------------------------------------------------

    async def collections(self) -> list[Collection]:
        """The collections this run may read (its scope, or all), fetched once."""
        if self._collections is None:
            every = await self.library.collections()
            wanted = set(self.scope.collections)
            self._collections = [c for c in every if not wanted or c.name in wanted]
        return list(self._collections)

    def plan_subquery(
        self,
        text: str,
        *,
        parent_id: str,
        round_no: int = 0,
        origin: SubQueryOrigin = "decompose",
        collections: Sequence[str] = (),
    ) -> SubQuery:
        """Make a sub-query node and emit SubQueryPlanned."""
        node_id = self.new_node_id("q")
        self.emit(
            SubQueryPlanned(
                run_id=self.run_id,
                node_id=node_id,
                parent_id=parent_id,
                text=text,
                collections=tuple(collections),
                round_no=round_no,
                origin=origin,
            )
        )
        return SubQuery(
            node_id=node_id,
            text=text,
            round_no=round_no,
            collections=tuple(collections),
            parent_id=parent_id,
        )

    async def search(
        self,
        requests: Sequence[SearchRequest | SubQuery | tuple[str, str]],
        *,
        mode: SearchMode = "hybrid",
        top_k: int | None = None,
    ) -> list[list[Hit]]:
        """Search every request in as few library calls as possible (one per distinct
        collection set), counting one search call per request. When the
        search-call budget is short, only the first requests are searched (the
        rest get no hits) and the next ``check_budget`` stops the run."""
        self.check_budget()
        reqs = [_as_request(r) for r in requests]
        allowed = reqs[: self.tracker.search_calls_left]
        if len(allowed) < len(reqs):
            self.notice(
                f"The search-call budget allows {len(allowed)} of {len(reqs)} searches this round.",
                level="warning",
            )
        self.tracker.search_calls += len(allowed)
        k = top_k or self.budget.top_k
        results: list[list[Hit]] = [[] for _ in reqs]
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, req in enumerate(allowed):
            groups.setdefault(req.collections or self.scope.collections, []).append(i)
        async with self.events.kept_alive():  # a slow search keeps the status line alive too
            for names, indices in groups.items():
                hits = await self.library.search(
                    [allowed[i].text for i in indices],
                    collections=list(names) or None,
                    mode=mode,
                    top_k=k,
                )
                for i, found in zip(indices, hits, strict=False):
                    results[i] = list(found)
        for req, found in zip(allowed, results, strict=False):
            self.evidence.note_ranks(found)
            self.emit(
                SearchFinished(
                    run_id=self.run_id, node_id=req.node_id, hits=tuple(found), search_mode=mode
                )
            )
        return results

    # -- evidence -----------------------------------------------------------

    def add_evidence(self, hit: Hit, subquery: str) -> Evidence:
        """Register a relevant chunk; a chunk already in the table keeps its number."""
        evidence, new = self.evidence.add(hit.chunk, subquery)
        if new:
            self.emit(EvidenceAdded(run_id=self.run_id, evidence=evidence))
        return evidence

    # -- a follow-up ----------------------------------------------------------

    async def take_up_prior(self) -> None:
        """A follow-up starts with its thread's evidence, under the same numbers (a
        passage the library no longer has is kept as its quote); its report writer was
        given the earlier answers when the context was made."""
        if self.prior is None:
            return
        thread_evidence = self.prior.evidence
        found = {
            c.chunk_id: c
            for c in await self.library.get_chunks([e.chunk_id for e in thread_evidence])
        }
        for e in sorted(thread_evidence, key=lambda e: e.number):
            chunk = found.get(e.chunk_id) or Chunk(
                chunk_id=e.chunk_id,
                doc_id="",
                collection=e.collection,
                path=e.path,
                text=e.quote,
                title=e.title,
            )
            self.evidence.restore(e, chunk)

    def earlier_prompt(self) -> tuple[str, str]:
        """For a follow-up's first planning prompt: (a system rule, the fenced earlier
        questions and answers); ("", "") for a run that is not a follow-up."""
        if self.prior is None:
            return "", ""
        return follow_up.FOLLOW_UP_RULE, follow_up.earlier_block(self.prior)

    def searched_before(self) -> set[str]:
        """The thread's earlier searches, as a repeat filter's seen keys (empty when not a follow-up)."""
        return follow_up.already_searched(self.prior) if self.prior is not None else set()

    def follow_up_queries(self, limit: int = 3) -> list[str]:
        """Searches, written by rule, for what a follow-up asks beyond the earlier answers."""
        return (
            follow_up.follow_up_queries(self.question, self.prior, limit=limit)
            if self.prior
            else []
        )

    # -- report -------------------------------------------------------------

    async def write_report(
        self,
        *,
        guidance: str = "",
        open_questions: Sequence[str] = (),
        answer: str = "",
        preface: str = "",
        chained: bool = False,
    ) -> Report:
        """Write the cited Markdown report (see :mod:`app.research.report`);
        ``chained``: the evidence was found hop by hop, as deep's rounds find it."""
        return await self.report.write(
            view=self.source_view,
            guidance=guidance,
            open_questions=[*open_questions, *self.open_questions],
            answer=answer,
            preface=preface,
            chained=chained,
        )

    def partial_report(self, note: str) -> Report:
        """A report built without the model, from what the run has so far (cancel, time-out)."""
        return self.report.partial(note, self.open_questions)


def _as_request(item: SearchRequest | SubQuery | tuple[str, str]) -> SearchRequest:
    if isinstance(item, SearchRequest):
        return item
    if isinstance(item, SubQuery):
        return SearchRequest(node_id=item.node_id, text=item.text, collections=item.collections)
    node_id, text = item
    return SearchRequest(node_id=node_id, text=text)
