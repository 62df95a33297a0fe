"""Python's cyclic garbage collection, run on the GUI thread only.

CPython collects reference cycles in whichever thread happens to allocate when
a generation's threshold is crossed. In Fathom the worker threads (embedding,
writing, history, export) allocate most, so a cycle holding a Qt widget — a
closed dialog, a lambda connected to a signal — used to be destroyed on a
worker thread while the GUI thread painted. Qt widgets are not thread-safe:
the process crashed with a segmentation fault (seen in CI; a widget stress
script reproduces it within seconds).

``GuiThreadCollector`` turns automatic collection off and collects from a
timer on the GUI thread instead, by CPython's own rules: a generation is
collected when its count passes its threshold, and the oldest generation only
when it has grown by a quarter since the last full collection (CPython's
``long_lived_pending > long_lived_total / 4``), so full collections stay as
rare as before. pyqtgraph's ``GarbageCollector`` does the same.

``settle()`` moves everything alive after start-up into the permanent
generation (``gc.freeze``), so a later full collection no longer walks the
hundreds of thousands of objects the imported libraries keep: fewer and
shorter pauses of the window. Until then (the seconds of start-up, while the
heavy libraries are imported) only the young generations are collected: a full
collection there walked the whole heap for 74 ms, and what it would free is
little next to what start-up keeps.
"""

from __future__ import annotations

import gc
import logging
import time

from PySide6.QtCore import QObject, QTimer

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 100
FULL_COLLECTION_GROWTH = (
    0.25  # CPython: a full collection once the old generation grew by a quarter
)


class GuiThreadCollector(QObject):
    """Collects garbage cycles from a timer on the thread it was made on (the GUI thread)."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = CHECK_INTERVAL_MS) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        self._old_after_full = len(gc.get_objects(generation=2))
        self._settled = False
        self.collections = [0, 0, 0]  # how many of each generation this collector ran
        self.longest_ms = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Stop collecting here and give collection back to CPython (as it was before ``start``)."""
        self._timer.stop()
        if self._was_enabled:
            gc.enable()

    def settle(self) -> None:
        """Start-up is over: what is alive now is kept for good (``gc.freeze``), out of every collection."""
        gc.freeze()
        self._settled = True
        self._old_after_full = len(gc.get_objects(generation=2))
        log.debug("froze %d objects after start-up", gc.get_freeze_count())

    def check(self) -> None:
        """Collect the oldest generation that is due, as CPython would have by now.

        Between two ticks the workers may have allocated many times generation
        0's threshold; CPython would have run that many young collections, each
        counting towards the next generation's, so the counts are scaled before
        the oldest due generation is chosen (one collection per tick: it covers
        the younger ones).
        """
        count0, count1, count2 = gc.get_count()
        threshold0, threshold1, threshold2 = self._thresholds
        if count0 <= threshold0:
            return
        count1 += count0 // threshold0
        if count1 <= threshold1:
            self._collect(0)
            return
        count2 += count1 // threshold1
        if count2 > threshold2 and self._settled and self._old_generation_grew():
            self._collect(2)
        else:
            self._collect(1)

    def _old_generation_grew(self) -> bool:
        old = len(gc.get_objects(generation=2))
        return old - self._old_after_full > self._old_after_full * FULL_COLLECTION_GROWTH

    def _collect(self, generation: int) -> None:
        started = time.perf_counter()
        gc.collect(generation)
        self.longest_ms = max(self.longest_ms, (time.perf_counter() - started) * 1000)
        self.collections[generation] += 1
        if generation == 2:
            self._old_after_full = len(gc.get_objects(generation=2))
