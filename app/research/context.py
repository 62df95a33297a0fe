"""RunContext: what a research mode sees of its run.

A mode (``app/research/modes/<name>.py``) gets one ``RunContext`` and talks to
the model, the library and the event stream only through it. The context:

* emits events (``emit``) and makes node ids (``new_node_id``);
* calls the model (``call_structured``, ``call_text``, ``stream_text``): counts
  tokens against the budget, limits concurrency, shows reasoning under the
  node, and never lets a malformed structured reply crash the run
  (``call_structured`` returns the given default and emits a Notice);
* searches the library (``search``): all sub-queries of a round in one batched
  call, counted against ``max_search_calls``, one ``SearchFinished`` each;
* keeps the evidence table (``add_evidence``) numbered ``[n]``;
* enforces budgets (``check_budget``, ``start_round``, ``cap_subqueries``),
  raising :class:`~app.research.budget.BudgetHit` with the budget's name;
* writes the report (``write_report``), shared by all modes.

``options`` (free-form, from ``ResearchEngine.run(options=...)``): ``prompt_chars``
(room for document text per prompt, default 6000), ``report_max_tokens``
(default 900), ``report_share`` (share of ``max_seconds`` kept for writing the
report, default 0.2), ``short_answer`` (also extract ``Report.answer``, for
benchmarks).

A typical mode::

    async def run_mode(ctx: RunContext) -> Report:
        try:
            ...  # rounds of ctx.start_round(), ctx.search(...), ctx.call_structured(...)
        except BudgetHit as hit:
            ctx.stop(hit.budget)
        return await ctx.write_report()
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core.errors import ModelTimeout, StructuredOutputError
from app.core.events import (
    ROOT_NODE,
    EvidenceAdded,
    Notice,
    ReasoningDelta,
    ResearchEvent,
    RoundStarted,
    SearchFinished,
    SubQueryPlanned,
    UsageUpdated,
)
from app.core.models import ZERO_USAGE, Budget, Collection, Evidence, Hit, Report, Scope, SubQuery, Usage
from app.ingest.library import Library
from app.llm.base import ChatModel, Message
from app.research.budget import REPORT_SHARE, BudgetHit, BudgetTracker
from app.research.evidence import EvidenceRegistry
from app.research.snippets import FULL_VIEW, SourceView
from app.store.vectors import SearchMode

T = TypeVar("T")

STRUCTURED_MAX_TOKENS = 384
TEXT_MAX_TOKENS = 512
REPORT_MAX_TOKENS = 900
PLAN_TEMPERATURE = 0.1
WRITE_TEMPERATURE = 0.3
DEFAULT_PROMPT_CHARS = 6000  # room for document text in one prompt
REPORT_MARGIN_S = 2.0  # the report's calls may end this much past max_seconds


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
        options: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.question = question
        self.mode = mode
        self.scope = scope or Scope()
        self.budget = budget or Budget()
        self.model = model
        self.library = library
        self.run_id = run_id
        self.options: dict[str, Any] = dict(options or {})
        self.tracker = BudgetTracker(
            self.budget, clock, report_share=float(self.options.get("report_share", REPORT_SHARE))
        )
        self.evidence = EvidenceRegistry()
        self.usage: Usage = ZERO_USAGE
        self.stop_reason: str | None = None
        self.open_questions: list[str] = []
        self.report_text = ""  # the report body streamed so far
        self.finishing = False  # True while the report is written: budgets no longer stop calls
        self.prompt_chars = int(self.options.get("prompt_chars", DEFAULT_PROMPT_CHARS))
        self.source_view: SourceView = FULL_VIEW  # how much evidence the report writer sees; a mode may narrow it
        self._emit = emit
        self._ids = itertools.count(1)
        self._semaphore = asyncio.Semaphore(max(1, self.budget.max_concurrent_calls))
        self._collections: list[Collection] | None = None

    # -- events and ids -----------------------------------------------------

    def emit(self, event: ResearchEvent) -> None:
        self._emit(event)

    def new_node_id(self, prefix: str = "n") -> str:
        return f"{prefix}{next(self._ids)}"

    def notice(self, message: str, *, level: str = "info", node_id: str = ROOT_NODE) -> None:
        self.emit(Notice(run_id=self.run_id, message=message, level=level, node_id=node_id))

    # -- budgets ------------------------------------------------------------

    def check_budget(self) -> None:
        """Raise BudgetHit for the first exhausted budget (not while writing the report)."""
        if not self.finishing:
            self.tracker.check()

    def start_round(self, parent_id: str = ROOT_NODE) -> tuple[str, int]:
        """Begin a round: ``(node_id, round_no)``; raises BudgetHit("max_rounds") when none is left."""
        round_no = self.tracker.start_round()
        node_id = self.new_node_id("round")
        self.emit(RoundStarted(run_id=self.run_id, node_id=node_id, round_no=round_no, parent_id=parent_id))
        return node_id, round_no

    def cap_subqueries(self, queries: Sequence[T]) -> list[T]:
        """At most ``max_subqueries`` of ``queries`` (a per-round cap)."""
        return list(queries[: max(1, self.budget.max_subqueries)])

    def stop(self, reason: str) -> None:
        """Record why the research loop stopped (the first reason wins)."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def _call_deadline(self) -> float:
        """Seconds this call may take before the wall-time budget is out."""
        left = self.tracker.total_seconds_left + REPORT_MARGIN_S if self.finishing else self.tracker.seconds_left
        return max(0.05, left)

    # -- model calls ----------------------------------------------------------

    @asynccontextmanager
    async def _model_slot(self) -> AsyncIterator[None]:
        self.check_budget()
        async with self._semaphore:
            self.check_budget()
            yield

    def _account(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.usage = self.usage + usage
        self.tracker.tokens = self.usage.total_tokens
        self.emit(UsageUpdated(run_id=self.run_id, total=self.usage))

    def _reasoning(self, node_id: str, text: str) -> None:
        if text:
            self.emit(ReasoningDelta(run_id=self.run_id, node_id=node_id, text=text))

    async def call_structured(
        self,
        node_id: str,
        messages: Sequence[Message],
        schema: dict[str, Any],
        default: Any,
        *,
        temperature: float = PLAN_TEMPERATURE,
        max_tokens: int = STRUCTURED_MAX_TOKENS,
    ) -> Any:
        """The model's reply as a JSON value validated against ``schema``.

        A reply that does not fit the schema (after the back end's repair) gives
        ``default`` and a Notice; the run goes on. Budget exhaustion raises
        BudgetHit; other model errors (back end down) propagate and fail the run.
        """
        async with self._model_slot():
            try:
                async with asyncio.timeout(self._call_deadline()):
                    result = await self.model.structured(
                        messages, schema, temperature=temperature, max_tokens=max_tokens
                    )
            except StructuredOutputError as exc:
                task = schema.get("title", "structured output")
                self.notice(
                    f"The model's {task} reply did not fit its format ({exc.message}); using a default.",
                    level="warning",
                    node_id=node_id,
                )
                self._account(exc.usage)
                return default
            except TimeoutError:
                if self.finishing:
                    self.notice("A check was skipped: the wall-time budget ran out.", level="warning")
                    self.stop("max_seconds")
                    return default
                raise self._timeout_hit() from None
        self._reasoning(node_id, result.reasoning)
        self._account(result.usage)
        return result.value

    async def call_text(
        self,
        node_id: str,
        messages: Sequence[Message],
        *,
        temperature: float = WRITE_TEMPERATURE,
        max_tokens: int = TEXT_MAX_TOKENS,
    ) -> str:
        """A plain-text reply; its reasoning is shown under ``node_id``."""
        return await self.stream_text(node_id, messages, temperature=temperature, max_tokens=max_tokens)

    async def stream_text(
        self,
        node_id: str,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool | None] | None = None,
        temperature: float = WRITE_TEMPERATURE,
        max_tokens: int = TEXT_MAX_TOKENS,
    ) -> str:
        """Stream a reply: ``on_text`` gets each answer piece (returning False stops the
        generation early); reasoning goes to the node."""
        parts: list[str] = []
        reasoning_chars = 0
        accounted = False
        started = time.monotonic()
        async with self._model_slot():
            try:
                async with asyncio.timeout(self._call_deadline()):
                    stream = self.model.stream(messages, temperature=temperature, max_tokens=max_tokens)
                    try:
                        async for delta in stream:
                            if delta.kind == "content" and delta.text:
                                parts.append(delta.text)
                                if on_text is not None and on_text(delta.text) is False:
                                    self.notice("The model started repeating itself; its reply was cut there.")
                                    break
                            elif delta.kind == "reasoning":
                                reasoning_chars += len(delta.text)
                                self._reasoning(node_id, delta.text)
                            elif delta.kind == "done":
                                accounted = True
                                self._account(delta.usage)
                    finally:
                        closer = getattr(stream, "aclose", None)
                        if closer is not None:
                            await closer()
                        if not accounted:  # cut early: the back end never reported usage, estimate it
                            self._account(
                                Usage(
                                    prompt_tokens=sum(len(m["content"]) for m in messages) // 4,
                                    completion_tokens=len(parts) + reasoning_chars // 4,
                                    latency_s=time.monotonic() - started,
                                    model=getattr(self.model, "model_name", ""),
                                )
                            )
            except TimeoutError:
                if self.finishing:
                    self.notice("The report was cut short by the wall-time budget.", level="warning")
                    self.stop("max_seconds")
                    return "".join(parts)
                raise self._timeout_hit() from None
        return "".join(parts)

    def _timeout_hit(self) -> BudgetHit | ModelTimeout:
        if self.tracker.seconds_left <= 0.1:
            return BudgetHit("max_seconds", f"{self.tracker.elapsed:.1f} s used of {self.budget.max_seconds:g} s")
        return ModelTimeout("A model call timed out.", "Try a smaller model or raise the time budget.")

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
        origin: str = "decompose",
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
            node_id=node_id, text=text, round_no=round_no, collections=tuple(collections), parent_id=parent_id
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
        for names, indices in groups.items():
            hits = await self.library.search(
                [allowed[i].text for i in indices], collections=list(names) or None, mode=mode, top_k=k
            )
            for i, found in zip(indices, hits, strict=False):
                results[i] = list(found)
        for req, found in zip(allowed, results, strict=False):
            self.emit(SearchFinished(run_id=self.run_id, node_id=req.node_id, hits=tuple(found), search_mode=mode))
        return results

    # -- evidence -----------------------------------------------------------

    def add_evidence(self, hit: Hit, subquery: str) -> Evidence:
        """Register a relevant chunk; a chunk already in the table keeps its number."""
        evidence, new = self.evidence.add(hit.chunk, subquery)
        if new:
            self.emit(EvidenceAdded(run_id=self.run_id, evidence=evidence))
        return evidence

    # -- report -------------------------------------------------------------

    async def write_report(
        self,
        *,
        guidance: str = "",
        open_questions: Sequence[str] = (),
        answer: str = "",
        preface: str = "",
    ) -> Report:
        """Write the cited Markdown report (see :mod:`app.research.report`)."""
        from app.research.report import write_report

        return await write_report(
            self, guidance=guidance, open_questions=open_questions, answer=answer, preface=preface
        )

    def partial_report(self, note: str) -> Report:
        """A report built without the model, from what the run has so far (cancel, time-out)."""
        from app.research.report import partial_report

        return partial_report(self, note)


def _as_request(item: SearchRequest | SubQuery | tuple[str, str]) -> SearchRequest:
    if isinstance(item, SearchRequest):
        return item
    if isinstance(item, SubQuery):
        return SearchRequest(node_id=item.node_id, text=item.text, collections=item.collections)
    node_id, text = item
    return SearchRequest(node_id=node_id, text=text)
