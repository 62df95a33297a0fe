"""Garbage cycles are collected on the GUI thread, never on a worker's (``app/ui/gui_thread_gc.py``).

A cycle holding a widget destroyed on a worker thread while the GUI thread
paints crashes the process; these tests make a cycle that records the thread
it dies on, let a worker thread allocate enough to cross CPython's thresholds,
and wait until the cycle is gone.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject

from app.ui.gui_thread_gc import GuiThreadCollector

ROOT = Path(__file__).resolve().parents[2]


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


def test_without_the_collector_the_worker_thread_collects_it(
    qtbot: Any, collector: GuiThreadCollector
) -> None:
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


WIDGET_CYCLES = """
import sys, threading, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QTextBrowser, QVBoxLayout, QWidget

app = QApplication(sys.argv)
app.setQuitOnLastWindowClosed(False)  # every widget here dies; only the 400th round ends the loop
if sys.argv[1] == "collector":
    from app.ui.gui_thread_gc import GuiThreadCollector

    collector = GuiThreadCollector(app)
    collector.start()
stop = False


class Node:
    def __init__(self):
        self.me = self


def worker():  # allocates cycles: CPython collects on this thread whenever generation 0 fills
    while not stop:
        junk = [Node() for _ in range(2000)]
        del junk
        time.sleep(0.001)


rounds = 0


def make_widgets():  # shown widgets that die in cycles, while the GUI thread paints
    global rounds
    for _ in range(20):
        widget = QWidget()
        layout = QVBoxLayout(widget)
        text = QTextBrowser(widget)
        text.setHtml("<b>a cycle</b>" * 200)
        layout.addWidget(text)
        widget.me = widget
        widget.show()
        widget.repaint()
        del widget, layout, text
    rounds += 1
    if rounds > 400:
        app.quit()


thread = threading.Thread(target=worker)
thread.start()
timer = QTimer()
timer.timeout.connect(make_widgets)
timer.start(1)
app.exec()
stop = True
thread.join()
print("survived", rounds, "rounds")
"""


@pytest.mark.parametrize("mode", ["collector", "cpython"])
def test_widgets_dying_in_cycles_while_a_worker_allocates(mode: str, tmp_path: Path) -> None:
    """The crash itself: with CPython's own collection the process dies (SIGSEGV); with the collector it lives."""
    script = tmp_path / "widget_cycles.py"
    script.write_text(WIDGET_CYCLES, encoding="utf-8")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    if mode == "collector":
        assert done.returncode == 0 and done.stdout.startswith("survived 401 rounds"), (
            done.returncode,
            done.stdout,
        )
    else:
        assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout)
