"""Garbage cycles are collected on the GUI thread, never on a worker's (``app/ui/gui_thread_gc.py``).

A cycle holding a widget destroyed on a worker thread while the GUI thread
paints crashes the process; these tests make a cycle that records the thread
it dies on, let a worker thread allocate enough to cross CPython's thresholds,
and wait until the cycle is gone.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QObject

from app.ui.gui_thread_gc import GuiThreadCollector


class Cycle:
    """A reference cycle with a Qt object in it that notes the thread it was finalized on."""

    def __init__(self, died_on: list[int]) -> None:
        self.me = self
        self.qobject = QObject()
        self.died_on = died_on

    def __del__(self) -> None:
        self.died_on.append(threading.get_ident())


def allocate_in_a_worker(objects: int, keep: list[Any] | None = None) -> None:
    """Tracked containers made on a worker thread: what triggers CPython's automatic collection."""

    def work() -> None:
        made = [{"n": n} for n in range(objects)]
        if keep is not None:
            keep.extend(made)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


@pytest.fixture
def collector(gui_thread_gc: GuiThreadCollector) -> Iterator[GuiThreadCollector]:
    yield gui_thread_gc


def test_a_cycle_dropped_while_a_worker_allocates_dies_on_the_gui_thread(
    qtbot: Any, collector: GuiThreadCollector
) -> None:
    died_on: list[int] = []
    Cycle(died_on)
    kept: list[Any] = []
    allocate_in_a_worker(50_000, keep=kept)  # dozens of times generation 0's threshold, alive
    assert died_on == []  # the worker's allocations collected nothing
    qtbot.waitUntil(lambda: died_on != [], timeout=5_000)
    assert died_on == [threading.get_ident()]
    assert collector.collections[0] + collector.collections[1] >= 1


def test_without_the_collector_the_worker_thread_collects_it(qtbot: Any, collector: GuiThreadCollector) -> None:
    """What the collector is for: CPython on its own finalizes the cycle on the allocating thread."""
    collector.stop()
    gc.collect()  # generation 0 starts empty: the main thread's next few hundred allocations collect nothing
    died_on: list[int] = []
    Cycle(died_on)
    allocate_in_a_worker(50_000)
    assert len(died_on) == 1 and died_on[0] != threading.get_ident()


def test_an_old_cycle_is_collected_once_the_old_generation_grew_by_a_quarter(
    qtbot: Any, collector: GuiThreadCollector
) -> None:
    gc.collect()
    gc.freeze()  # the old generation starts empty, so a quarter of it is a few objects, not a million
    try:
        collector.settle()
        died_on: list[int] = []
        old = Cycle(died_on)
        gc.collect(1)
        gc.collect(1)  # alive through two collections: now in the oldest generation
        assert gc.is_tracked(old) and any(o is old for o in gc.get_objects(generation=2))
        del old
        kept: list[Any] = []
        allocate_in_a_worker(200_000, keep=kept)  # new long-lived objects: the old generation grows
        qtbot.waitUntil(lambda: died_on != [], timeout=20_000)
        assert died_on == [threading.get_ident()]
        assert collector.collections[2] >= 1
    finally:
        gc.unfreeze()
