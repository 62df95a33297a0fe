"""The research engine: ``run(question, mode, scope, budget)`` is an async
iterator of typed events, from ``RunStarted`` to ``Finished`` or ``Failed``.

The mode runs as its own task and emits events into a queue; the engine
yields them, persists every one (``RunStore``), accounts usage, enforces the
wall-time budget with a hard stop, and turns errors into a ``Failed`` event
with a sentence. Stopping a run (``engine.stop(run_id)``) ends it within a
second with ``Finished(stop_reason="cancelled")`` and the partial report;
closing or cancelling the iterator does the same, persisting that final event.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from app.core.errors import FathomError
from app.core.events import Failed, Finished, Notice, ResearchEvent, RunStarted
from app.core.models import Budget, Report, Scope
from app.ingest.library import Library
from app.llm.base import ChatModel
from app.research.budget import BudgetHit, describe_stop
from app.research.context import RunContext
from app.research.modes import ModeRunner, load_mode
from app.research.recorder import RunRecorder
from app.store.runs import RunStore

log = logging.getLogger(__name__)

CANCEL_WAIT_S = 0.8  # how long a cancelled mode task gets to unwind
HARD_STOP_MARGIN_S = 5.0  # beyond max_seconds, the engine cuts the run (partial report)

_STOP = object()
DEFAULT_SCOPE = Scope()
DEFAULT_BUDGET = Budget()


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class ResearchEngine:
    """Runs research modes over a model and a library; optionally records runs."""

    def __init__(self, model: ChatModel, library: Library, runs: RunStore | None = None) -> None:
        self.model = model
        self.library = library
        self.runs = runs
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
        options: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[ResearchEvent]:
        """Research ``question``; yields events, the last one Finished or Failed."""
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
        )
        recorder = RunRecorder(self.runs, run_id)
        started = RunStarted(
            run_id=run_id,
            question=ctx.question,
            mode=mode,
            collections=tuple(scope.collections),
            budget=budget,
            model=_model_name(self.model),
        )
        recorder.start(started)
        self._queues[run_id] = queue
        task: asyncio.Task[None] | None = None
        done = False
        warned_history = False
        try:
            yield started
            runner = self._runner_or_failure(ctx)
            if isinstance(runner, Failed):
                done = True
                recorder.record(runner)
                yield runner
                return
            task = asyncio.create_task(self._drive(ctx, runner), name=f"research-{run_id}")
            while True:
                item = await queue.get()
                if item is _STOP:
                    final = await self._cancel(task, ctx, queue, recorder)
                    done = True
                    recorder.record(final)
                    yield final
                    return
                event: ResearchEvent = item
                terminal = isinstance(event, (Finished, Failed))
                done = done or terminal
                recorder.record(event)
                if terminal:  # the run is in the history (or known not to be) before its end is told
                    await recorder.drained()
                if recorder.failure and not warned_history:
                    warned_history = True
                    yield Notice(
                        run_id=run_id,
                        level="warning",
                        message=f"This run cannot be saved to the history ({recorder.failure}); "
                        "its report is shown here but will not be in History.",
                    )
                yield event
                if terminal:
                    return
        finally:
            self._queues.pop(run_id, None)
            if not done:
                final = await self._cancel(task, ctx, queue, recorder)
                recorder.record(final)
            await recorder.aclose()

    # -- internals ----------------------------------------------------------

    def _runner_or_failure(self, ctx: RunContext) -> ModeRunner | Failed:
        if not ctx.question:
            return Failed(run_id=ctx.run_id, message="The question is empty: type what you want to find out.")
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
                    report = await runner(ctx)
                except BudgetHit as hit:
                    # A mode may let a budget stop propagate: write the report here.
                    ctx.stop(hit.budget)
                    report = await ctx.write_report()
            ctx.emit(self._finished(ctx, report, ctx.stop_reason or "completed"))
        except TimeoutError:
            ctx.stop("max_seconds")
            report = ctx.partial_report("The run hit its wall-time budget before the report was complete.")
            ctx.emit(self._finished(ctx, report, "max_seconds"))
        except asyncio.CancelledError:
            raise
        except FathomError as exc:
            ctx.emit(self._failed(ctx, str(exc)))
        except Exception as exc:
            log.exception("research run %s failed", ctx.run_id)
            ctx.emit(self._failed(ctx, f"The research run failed unexpectedly ({type(exc).__name__}: {exc})."))

    async def _cancel(
        self,
        task: asyncio.Task[None] | None,
        ctx: RunContext,
        queue: asyncio.Queue[Any],
        recorder: RunRecorder,
    ) -> ResearchEvent:
        """Cancel the mode task, persist what it emitted, and make the final event."""
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
        final: ResearchEvent | None = None
        while not queue.empty():
            item = queue.get_nowait()
            if item is _STOP:
                continue
            if isinstance(item, (Finished, Failed)):
                final = item
                continue
            recorder.record(item)
        if final is not None:
            return final
        ctx.stop("cancelled")
        report = ctx.partial_report("The run was stopped before it finished.")
        return self._finished(ctx, report, "cancelled")

    def _finished(self, ctx: RunContext, report: Report, stop_reason: str) -> Finished:
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
        return Failed(run_id=ctx.run_id, message=message, usage=ctx.usage, elapsed_s=round(ctx.tracker.elapsed, 3))


def _model_name(model: ChatModel) -> str:
    try:
        return str(model.model_name)
    except Exception:
        return ""


__all__ = ["ResearchEngine", "describe_stop", "new_run_id"]
