"""How long the GUI thread goes without serving its event loop.

A 10 ms ``QTimer`` runs on the GUI thread; the gaps between its ticks are what
a user feels (a gap of 500 ms is half a second of frozen window). Used by
``tests/bench/bench_ui.py`` to report the stall and by the window tests as a
guard (a generous bound, so a loaded machine does not make it flaky).
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass

from PySide6.QtCore import QTimer

TICK_MS = 10


@dataclass(frozen=True)
class Stall:
    """Gaps between ticks, in milliseconds."""

    max_ms: float
    p99_ms: float
    median_ms: float
    ticks: int
    seconds: float
    over_50ms: int

    def __str__(self) -> str:
        return (
            f"longest gap {self.max_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, median {self.median_ms:.1f} ms "
            f"over {self.ticks} ticks ({self.seconds:.1f} s); {self.over_50ms} gaps > 50 ms"
        )


class StallMonitor:
    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def start(self) -> None:
        self.ticks = [time.perf_counter()]
        self.timer.start()

    def stop(self) -> Stall | None:
        """Stop measuring (the time since the last tick counts as a gap); None if never started."""
        self.timer.stop()
        self.ticks.append(time.perf_counter())  # a stall running up to now counts too
        gaps = sorted((b - a) * 1000 for a, b in itertools.pairwise(self.ticks))
        if not gaps:
            return None
        return Stall(
            max_ms=gaps[-1],
            p99_ms=gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))],
            median_ms=statistics.median(gaps),
            ticks=len(gaps),
            seconds=self.ticks[-1] - self.ticks[0],
            over_50ms=sum(1 for g in gaps if g > 50),
        )
