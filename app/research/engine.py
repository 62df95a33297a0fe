"""The research engine: ``run(question, mode, scope, budget)`` is an async
iterator of typed events, from ``RunStarted`` to ``Finished`` or ``Failed``.

The mode runs as its own task and emits events into a queue; the engine
yields them, persists every one (``RunStore``), accounts usage, enforces the
wall-time budget with a hard stop, and turns errors into a ``Failed`` event
with a sentence. Stopping a run (``engine.stop(run_id)``) cancels the mode's
task and waits until it has ended (no task is left running behind the run),
then ends with ``Finished(stop_reason="cancelled")`` and the partial report
built from every piece of evidence found; closing or cancelling the iterator
does the same, persisting that final event. When the history cannot be
written, a warning ``Notice`` says so once, before the run's end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from app.core.errors import FathomError
from app.core.events import Failed, Finished, Notice, ResearchEvent, RunStarted
from app.core.models import Budget, Report, Scope
from app.ingest.library import Library
from app.llm.base import ChatModel
from app.research import provenance
from app.research.budget import BudgetHit, describe_stop
from app.research.context import RunContext
from app.research.follow_up import Prior
from app.research.history_writer import RunRecorder
from app.research.modes import MODES
from app.research.run_options import RunOptions
from app.research.scope_check import partial_scope_notice
from app.store.research_runs import RunStore

log = logging.getLogger(__name__)

SLOW_STOP_LOG_S = (
    5.0  # a cancelled mode task still running after this is logged (and still awaited)
)
HARD_STOP_MARGIN_S = 5.0  # beyond max_seconds, the engine cuts the run (partial report)
PROVENANCE_TIMEOUT_S = 60.0  # hashing a model file the first time: seconds per gigabyte

_STOP = object()
DEFAULT_SCOPE = Scope()
DEFAULT_BUDGET = Budget()
EMPTY_QUESTION = "The question is empty: type what you want to find out."

ModeRunner = Callable[[RunContext], Awaitable[Report]]


def load_mode(name: str) -> ModeRunner:
    """The runner of mode ``name`` (its module imported now); ValueError names the known modes."""
    try:
        module_name, attr = MODES[name]
    except KeyError:
        known = ", ".join(sorted(MODES))
        raise ValueError(f"Unknown research mode '{name}'. Known modes: {known}.") from None
    module = importlib.import_module(module_name)
    runner: ModeRunner = getattr(module, attr)
    return runner


async def empty_scope_problem(library: Library, scope: Scope) -> str | None:
    """Why a run over ``scope`` could find nothing — no collection in it holds an
    indexed document — or None when it can search. Asked before a run starts
    (the window and ``fathom ask``), so an empty library never loads a model."""
    collections = await library.collections()
    if not collections:
        return "The library is empty."
    chosen = [c for c in collections if not scope.collections or c.name in scope.collections]
    if any(c.documents > 0 for c in chosen):
        return None
    if scope.collections:
        names = ", ".join(scope.collections)
        one = len(scope.collections) == 1
        return f"The collection{'' if one else 's'} {names} {'has' if one else 'have'} no indexed documents yet."
    return "The library's collections have no indexed documents yet."


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class ResearchEngine:
    """Runs research modes over a model and a library; optionally records runs.

    Runs are recorded into the history file of ``runs`` (a ``RunStore``), or
    of ``history`` (its path); the engine itself never touches SQLite on the
    event loop: a writer thread per run does.
    """

    def __init__(
        self,
        model: ChatModel,
        library: Library,
        runs: RunStore | None = None,
        *,
        history: Path | None = None,
    ) -> None:
        self.model = model
        self.library = library
        self.history_file = (
            history if history is not None else (runs.path if runs is not None else None)
        )
        self._queues: dict[str, asyncio.Queue[Any]] = {}

    def stop(self, run_id: str) -> bool:
        """Ask a running run to stop; it ends with Finished(stop_reason="cancelled")."""
        queue = self._queues.get(run_id)
        if queue is None:
            return False
        queue.put_nowait(_STOP)
        return True

    @property
    def active_runs(self) -> list[str]:
        return list(self._queues)

    async def run(
        self,
        question: str,
        *,
        mode: str = "deep",
        scope: Scope = DEFAULT_SCOPE,
        budget: Budget = DEFAULT_BUDGET,
        run_id: str | None = None,
        options: RunOptions | Mapping[str, Any] | None = None,
        runner: ModeRunner | None = None,
        follow_up: Prior | None = None,
    ) -> AsyncIterator[ResearchEvent]:
        """Research ``question``; yields events, the last one Finished or Failed.

        ``runner`` runs the research instead of ``mode``'s (a benchmark's variant,
        recorded under the name ``mode``). ``options``: :class:`RunOptions` (a mapping of
        option names is taken too; a name that is not an option is refused). ``follow_up`` makes the run a follow-up
        question of that thread (:mod:`app.research.follow_up`)."""
        run_id = run_id or new_run_id()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        ctx = RunContext(
            question=question.strip(),
            mode=mode,
            model=self.model,
            library=self.library,
            run_id=run_id,
            emit=queue.put_nowait,
            scope=scope,
            budget=budget,
            options=options,
            prior=follow_up,
        )
        recorder = RunRecorder(self.history_file, run_id)
        started = RunStarted(
            run_id=run_id,
            question=ctx.question,
            mode=mode,
            collections=tuple(scope.collections),
            budget=budget,
            model=_model_name(self.model),
            follows=follow_up.run_id if follow_up is not None else "",
        )
        recorder.start(started, thread_id=follow_up.thread_id if follow_up is not None else "")
        self._queues[run_id] = queue
        task: asyncio.Task[None] | None = None
        done = False
        warned = False

        def unsaved() -> Notice | None:
            nonlocal warned
            if warned or not recorder.failure:
                return None
            warned = True
            return Notice(
                run_id=run_id,
                level="warning",
                message=f"This run cannot be saved to the history ({recorder.failure}); "
                "its report is shown here but will not be in History.",
            )

        try:
            yield started
            if (partial := await partial_scope_notice(self.library, scope, run_id)) is not None:
                recorder.record(
                    partial
                )  # a collection still being indexed is searched, and marked partial
                yield partial
            mode_runner = self._runner_or_failure(ctx, runner)
            leftovers: list[ResearchEvent] = []
            final: ResearchEvent | None = mode_runner if isinstance(mode_runner, Failed) else None
            if not isinstance(mode_runner, Failed):
                task = asyncio.create_task(self._drive(ctx, mode_runner), name=f"research-{run_id}")
            while final is None:
                item = await queue.get()
                if item is _STOP:
                    leftovers, final = await self._cancel(task, ctx, queue)
                elif isinstance(item, (Finished, Failed)):
                    final = item
                else:
                    recorder.record(item)
                    if (notice := unsaved()) is not None:
                        yield notice
                    yield item
            for event in leftovers:  # what the mode emitted while it unwound: shown as it is saved
                recorder.record(event)
            recorder.record(final)
            done = True
            await (
                recorder.drained()
            )  # the run is in the history (or known not to be) before its end is told
            for event in leftovers:
                yield event
            if (notice := unsaved()) is not None:
                yield notice
            yield final
        finally:
            self._queues.pop(run_id, None)
            if not done:
                leftovers, final = await self._cancel(task, ctx, queue)
                for event in (*leftovers, final):
                    recorder.record(event)
            await recorder.aclose()

    # -- internals ----------------------------------------------------------

    def _runner_or_failure(self, ctx: RunContext, runner: ModeRunner | None) -> ModeRunner | Failed:
        if not ctx.question:
            return Failed(run_id=ctx.run_id, message=EMPTY_QUESTION)
        if runner is not None:
            return runner
        try:
            return load_mode(ctx.mode)
        except (ValueError, ImportError) as exc:
            return Failed(run_id=ctx.run_id, message=str(exc))

    async def _drive(self, ctx: RunContext, runner: ModeRunner) -> None:
        """Run the mode; always ends by emitting Finished or Failed (unless cancelled)."""
        hard_limit = ctx.budget.max_seconds + HARD_STOP_MARGIN_S
        try:
            async with asyncio.timeout(hard_limit):
                try:
                    await ctx.take_up_prior()
                    report = await runner(ctx)
                except BudgetHit as hit:
                    # A mode may let a budget stop propagate: write the report here.
                    ctx.stop(hit.budget)
                    report = await ctx.write_report()
            ctx.emit(await self._finished(ctx, report, ctx.stop_reason or "completed"))
        except TimeoutError:
            ctx.stop("max_seconds")
            report = ctx.partial_report(
                "The run hit its wall-time budget before the report was complete."
            )
            ctx.emit(await self._finished(ctx, report, "max_seconds"))
        except asyncio.CancelledError:
            raise
        except FathomError as exc:
            ctx.emit(self._failed(ctx, str(exc)))
        except Exception as exc:
            log.exception("research run %s failed", ctx.run_id)
            ctx.emit(
                self._failed(
                    ctx, f"The research run failed unexpectedly ({type(exc).__name__}: {exc})."
                )
            )

    async def _cancel(
        self,
        task: asyncio.Task[None] | None,
        ctx: RunContext,
        queue: asyncio.Queue[Any],
    ) -> tuple[list[ResearchEvent], ResearchEvent]:
        """Cancel the mode task and wait until it has ended; then what it emitted
        meanwhile, and the final event (its own end if it got there first)."""
        if task is not None:
            await _until_ended(task, ctx.run_id)
        leftovers: list[ResearchEvent] = []
        final: ResearchEvent | None = None
        while not queue.empty():
            item = queue.get_nowait()
            if item is _STOP:
                continue
            if isinstance(item, (Finished, Failed)):
                final = item
                continue
            leftovers.append(item)
        if final is None:
            ctx.stop("cancelled")
            report = ctx.partial_report("The run was stopped before it finished.")
            final = await self._finished(ctx, report, "cancelled")
        return leftovers, final

    async def _finished(self, ctx: RunContext, report: Report, stop_reason: str) -> Finished:
        """The run's last event, its report carrying its provenance (:mod:`app.research.provenance`)."""
        try:
            async with asyncio.timeout(PROVENANCE_TIMEOUT_S):
                searched = [c.name for c in await ctx.collections()]
                report = dataclasses.replace(
                    report,
                    provenance=await provenance.build(
                        question=ctx.question,
                        started_at=time.time() - ctx.tracker.elapsed,
                        mode=ctx.mode,
                        budget=ctx.budget,
                        model=self.model,
                        library=self.library,
                        collections=searched,
                        report=report,
                        hash_model=stop_reason != "cancelled",
                    ),
                )
        except (Exception, TimeoutError):  # a record of the run, never a reason for it to fail
            log.exception("research run %s: its provenance could not be recorded", ctx.run_id)
        return Finished(
            run_id=ctx.run_id,
            report=report,
            usage=ctx.usage,
            stop_reason=stop_reason,
            elapsed_s=round(ctx.tracker.elapsed, 3),
        )

    def _failed(self, ctx: RunContext, message: str) -> Failed:
        kept = len(ctx.evidence)
        if kept:
            message = f"{message} The {kept} pieces of evidence found so far are saved."
        return Failed(
            run_id=ctx.run_id,
            message=message,
            usage=ctx.usage,
            elapsed_s=round(ctx.tracker.elapsed, 3),
        )


async def _until_ended(task: asyncio.Task[None], run_id: str) -> None:
    """Cancel ``task`` and wait for it to end, however long its clean-up takes.

    Nothing is abandoned after a fixed delay: a task still unwinding after
    SLOW_STOP_LOG_S is logged, and still awaited.
    """
    task.cancel()
    logged = False
    while not task.done():
        await asyncio.wait({task}, timeout=SLOW_STOP_LOG_S)
        if not task.done() and not logged:
            logged = True
            log.warning("research run %s: still waiting for its work to stop", run_id)
    # _drive turns errors into events: not expected
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "research run %s ended with an error while stopping", run_id, exc_info=task.exception()
        )


def _model_name(model: ChatModel) -> str:
    try:
        return str(model.model_name)
    except Exception:
        return ""


__all__ = ["ResearchEngine", "describe_stop", "empty_scope_problem", "new_run_id"]
