"""Budgets of one research run: counters, and the first limit exhausted by name.

The run stops at the first exhausted budget and says which: ``BudgetHit``
carries the budget's name (``max_rounds``, ``max_search_calls``,
``max_tokens``, ``max_seconds``), which becomes the run's ``stop_reason``.
Research stops when 80% of ``max_seconds`` is used, keeping the rest for the
report, so a whole run ends within ``max_seconds`` (plus a few seconds at
most). ``max_subqueries`` caps each round (a cap, not a stop) and
``max_concurrent_calls`` limits parallel model calls.

:class:`BudgetTracker` counts; :class:`RunAccount` is a run's ledger around it:
the tokens it used, why it stopped, and whether it is writing its report (when
budgets no longer stop calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.core.errors import BudgetExhausted, ModelTimeout
from app.core.models import ZERO_USAGE, Budget, Usage
from app.core.settings import ResearchSettings

BUDGET_LABELS: dict[str, str] = {
    "max_rounds": "rounds",
    "max_subqueries": "sub-queries per round",
    "max_search_calls": "search calls",
    "max_tokens": "tokens",
    "max_seconds": "wall time",
}


def budget_from(
    defaults: ResearchSettings,
    *,
    max_rounds: int | None = None,
    max_subqueries: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    top_k: int | None = None,
) -> Budget:
    """A run's budget from the research settings and what the user set for this run
    (None: the setting) — the one rule for the window and ``fathom ask``: the search
    calls grow with rounds × sub-queries, so more rounds are never starved of searches."""
    rounds = defaults.max_rounds if max_rounds is None else max_rounds
    subqueries = defaults.max_subqueries if max_subqueries is None else max_subqueries
    return Budget(
        max_rounds=rounds,
        max_subqueries=subqueries,
        max_search_calls=max(defaults.max_search_calls, rounds * subqueries),
        max_tokens=defaults.max_tokens if max_tokens is None else max_tokens,
        max_seconds=defaults.max_seconds if max_seconds is None else max_seconds,
        max_concurrent_calls=defaults.max_concurrent_calls,
        top_k=defaults.top_k if top_k is None else top_k,
    )


REPORT_SHARE = 0.2  # of max_seconds, kept for writing the report
REPORT_MARGIN_S = 2.0  # the report's calls may end this much past max_seconds


class BudgetHit(BudgetExhausted):
    """A budget ran out; ``budget`` is its name, e.g. ``"max_tokens"``."""

    def __init__(self, budget: str, detail: str = "") -> None:
        label = BUDGET_LABELS.get(budget, budget)
        message = f"The {label} budget ({budget}) ran out"
        super().__init__(f"{message}: {detail}." if detail else f"{message}.")
        self.budget = budget


def describe_stop(stop_reason: str) -> str:
    """A sentence for a run's stop reason."""
    if stop_reason == "completed":
        return "The run finished on its own: no budget ran out."
    if stop_reason == "cancelled":
        return "The run was stopped before it finished; what it found so far is kept."
    label = BUDGET_LABELS.get(stop_reason)
    if label:
        return f"The run stopped because its {label} budget ({stop_reason}) ran out."
    return f"The run stopped: {stop_reason}."


class BudgetTracker:
    """Counts what a run has used against its :class:`Budget`."""

    def __init__(
        self,
        budget: Budget,
        clock: Callable[[], float] = time.monotonic,
        *,
        report_share: float = REPORT_SHARE,
    ) -> None:
        self.budget = budget
        # research stops early enough to leave this share of the wall time for the report
        self.research_seconds = budget.max_seconds * (1.0 - min(max(report_share, 0.0), 0.9))
        self._clock = clock
        self.started = clock()
        self.rounds = 0
        self.search_calls = 0
        self.tokens = 0

    @property
    def elapsed(self) -> float:
        return self._clock() - self.started

    @property
    def seconds_left(self) -> float:
        """Wall time left for research (the report's share of the budget excluded)."""
        return self.research_seconds - self.elapsed

    @property
    def total_seconds_left(self) -> float:
        """Wall time left before ``max_seconds``, report included."""
        return self.budget.max_seconds - self.elapsed

    @property
    def search_calls_left(self) -> int:
        return max(0, self.budget.max_search_calls - self.search_calls)

    def exhausted(self) -> str | None:
        """The name of the first exhausted budget (time, tokens, search calls), or None."""
        if self.seconds_left <= 0:
            return "max_seconds"
        if self.tokens >= self.budget.max_tokens:
            return "max_tokens"
        if self.search_calls >= self.budget.max_search_calls:
            return "max_search_calls"
        return None

    def check(self) -> None:
        """Raise :class:`BudgetHit` for the first exhausted budget."""
        name = self.exhausted()
        if name is not None:
            raise BudgetHit(name, self._detail(name))

    def start_round(self) -> int:
        """Count a new round (1-based); raise when ``max_rounds`` are done or another budget is out."""
        self.check()
        self.check_round_left()
        self.rounds += 1
        return self.rounds

    def check_round_left(self) -> None:
        """Raise BudgetHit("max_rounds") when every round has been used."""
        if self.rounds >= self.budget.max_rounds:
            raise BudgetHit("max_rounds", f"{self.rounds} of {self.budget.max_rounds} rounds done")

    def _detail(self, name: str) -> str:
        b = self.budget
        if name == "max_seconds":
            return f"{self.elapsed:.1f} s used of {b.max_seconds:g} s"
        if name == "max_tokens":
            return f"{self.tokens} tokens used of {b.max_tokens}"
        if name == "max_search_calls":
            return f"{self.search_calls} searches used of {b.max_search_calls}"
        return ""


class RunAccount:
    """What one run has spent and why it stopped (see the module docstring)."""

    def __init__(self, tracker: BudgetTracker) -> None:
        self.budget = tracker.budget
        self.tracker = tracker
        self.usage: Usage = ZERO_USAGE
        self.stop_reason: str | None = None
        self.finishing = False  # True while the report is written: budgets no longer stop calls

    def check(self) -> None:
        """Raise BudgetHit for the first exhausted budget (not while writing the report)."""
        if not self.finishing:
            self.tracker.check()

    def stop(self, reason: str) -> None:
        """Record why the research loop stopped (the first reason wins)."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        self.tracker.tokens = self.usage.total_tokens

    def call_deadline(self) -> float:
        """Seconds a model call may take before the wall-time budget is out."""
        left = (
            self.tracker.total_seconds_left + REPORT_MARGIN_S
            if self.finishing
            else self.tracker.seconds_left
        )
        return max(0.05, left)

    def timeout_hit(self) -> BudgetHit | ModelTimeout:
        """What a model call that timed out raises: the wall-time budget, or a slow model."""
        if self.tracker.seconds_left <= 0.1:
            return BudgetHit(
                "max_seconds", f"{self.tracker.elapsed:.1f} s used of {self.budget.max_seconds:g} s"
            )
        return ModelTimeout(
            "A model call timed out.", "Try a smaller model or raise the time budget."
        )
