"""Window benchmarks: event-loop stall while the library opens (a fresh one, and one
of 10,000 documents: ``--big-library N``), while ingesting,
during a research run, while a run stops, while a past run opens from History
and while a report is exported to PDF; the time from launch to the window
shown (cold and warm); and the longest silent gap of a research run in each
mode (``--silence``).

Run: ``.venv/bin/python tests/bench/bench_ui.py [--files N] [--skip-research]``
(offscreen by default). Prints the figures; nothing is asserted (the window
tests assert a generous bound with the same monitor).

Silence: ``tests/bench/bench_ui.py --silence [--modes deep plan ...] [--files N]``
runs one research per mode through the window with the starter model and
prints, per mode, the longest time the run showed the user nothing new
(no status-line text, no report token, no tree change; ``tests/silent_gaps.py``,
from the events' timestamps) and the status lines it showed.

Stall: a 10 ms QTimer runs on the GUI thread (``tests/stall_monitor.py``); the
gaps between its ticks are what a user feels. Reported: max and p99 of the
gaps, and the median. Finding what stalls: ``FATHOM_BENCH_WATCHDOG=40`` lists,
under each figure, the longest gaps over 40 ms with what the GUI thread did
meanwhile (on a CPU: our code or Qt's; waiting for a CPU: other processes;
blocked: mostly the GIL held by a worker thread) and where it was;
``FATHOM_BENCH_SLOTS=1`` also times each dispatch of ``app/ui`` code and lists
the slowest (it slows every Python call on the GUI thread a little).
Launch: ``python -c "run_app()"`` with FATHOM_STARTUP_REPORT; the clock runs
from process start to the "window shown" line. Cold: a fresh byte-code
cache (every module compiled) and a fresh data dir; warm: the median of 5.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from big_library import fill_library  # noqa: E402
from locate_data import shared_data_dir  # noqa: E402
from silent_gaps import longest_gap  # noqa: E402
from stall_monitor import SlotTimer, Stall, StallMonitor  # noqa: E402

SHARED = shared_data_dir()


# -- launch ------------------------------------------------------------------


def launch_once(env_extra: dict[str, str]) -> tuple[float, float]:
    """(seconds from process start to the window shown, as seen outside; as run_app measured it)."""
    env = {
        **os.environ,
        "FATHOM_STARTUP_REPORT": "1",
        "FATHOM_QUIT_AFTER_SHOWN": "0.05",
        **env_extra,
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main([]))"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    outside = inside = float("nan")
    for line in proc.stdout:
        if line.startswith("window shown after"):
            outside = time.perf_counter() - started
            inside = float(line.split()[3])
            break
    proc.wait(timeout=120)
    return outside, inside


def bench_launch(warm_runs: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cold = launch_once(
            {"FATHOM_HOME": f"{tmp}/home-cold", "PYTHONPYCACHEPREFIX": f"{tmp}/pycache"}
        )
        launch_once({"FATHOM_HOME": f"{tmp}/home"})  # fills the caches
        warm = [launch_once({"FATHOM_HOME": f"{tmp}/home"}) for _ in range(warm_runs)]
    print(
        f"launch → window shown, cold (fresh byte-code cache, new data dir): {cold[0]:.3f} s "
        f"(run_app itself: {cold[1]:.3f} s)"
    )
    print(
        f"launch → window shown, warm (median of {warm_runs}): {statistics.median(w[0] for w in warm):.3f} s "
        f"(min {min(w[0] for w in warm):.3f}, max {max(w[0] for w in warm):.3f}; "
        f"run_app itself: {statistics.median(w[1] for w in warm):.3f} s)"
    )


# -- stall -------------------------------------------------------------------


class Watchdog:
    """A thread that notes where the GUI thread is while a tick is late
    (``FATHOM_BENCH_WATCHDOG=1``: late by 150 ms; ``=40``: by 40 ms). :func:`report` then
    lists the longest gaps with what the GUI thread did meanwhile (the monitor's
    breakdown) and where it was (these samples)."""

    def __init__(self, monitor: StallMonitor, threshold_s: float = 0.15) -> None:
        import threading

        self.monitor = monitor
        self.threshold_s = threshold_s
        self.main_id = threading.get_ident()
        self.samples: list[tuple[float, str]] = []  # (perf_counter, where)
        thread = threading.Thread(target=self._watch, daemon=True)
        thread.start()

    def _watch(self) -> None:
        import threading
        import traceback

        while True:
            time.sleep(min(0.005, self.threshold_s / 3))
            ticks = self.monitor.ticks
            try:
                if not self.monitor.timer.isActive() or not ticks:
                    continue
            except RuntimeError:  # the timer is gone: the application is closing
                return
            now = time.perf_counter()
            if now - ticks[-1] > self.threshold_s:
                names = {t.ident: t.name for t in threading.enumerate()}
                for ident, frame in sys._current_frames().items():
                    if ident == threading.get_ident() or (ident != self.main_id and _idle(frame)):
                        continue
                    depth = 8 if ident == self.main_id else 4
                    stack = traceback.extract_stack(frame)[-depth:]
                    where = " <- ".join(
                        f"{Path(f.filename).name}:{f.lineno}:{f.name}" for f in reversed(stack)
                    )
                    name = "GUI" if ident == self.main_id else names.get(ident, str(ident))
                    self.samples.append((now, f"[{name}] {where}"))

    def during(self, start: float, end: float) -> list[str]:
        """Where the GUI thread was between these two times, most often first."""
        seen: dict[str, int] = {}
        for when, key in self.samples:
            if start <= when <= end:
                seen[key] = seen.get(key, 0) + 1
        return [f"{n}× {key}" for key, n in sorted(seen.items(), key=lambda kv: -kv[1])]


IDLE = {
    ("threading.py", "wait"),
    ("thread.py", "_worker"),
    ("selectors.py", "select"),
    ("queue.py", "get"),
}


def _idle(frame: Any) -> bool:
    """A worker thread waiting for work (left out of the watchdog's samples)."""
    return (Path(frame.f_code.co_filename).name, frame.f_code.co_name) in IDLE


WATCHDOG: Watchdog | None = None
SLOTS: SlotTimer | None = (
    None  # FATHOM_BENCH_SLOTS=1: each dispatch of app/ui code timed (slows Python calls)
)


def report(monitor: StallMonitor, label: str) -> Stall | None:
    stall = monitor.stop()
    print(f"{label}: {stall if stall is not None else 'no ticks'}", flush=True)
    if WATCHDOG is not None and stall is not None:
        base = monitor.ticks[0]
        for at, ms, said in monitor.worst(5):
            if ms < 1000 * WATCHDOG.threshold_s:
                continue
            print(f"  gap of {ms:.0f} ms at {at:.2f} s: {said}", flush=True)
            for where in WATCHDOG.during(base + at, base + at + ms / 1000)[:8]:
                print(f"      {where}", flush=True)
    if SLOTS is not None:
        for dispatch in sorted(SLOTS.slow, key=lambda d: -d.wall_ms)[:5]:
            print(f"  slow dispatch: {dispatch}", flush=True)
        SLOTS.slow.clear()
    return stall


async def until(condition: Any, timeout_s: float = 600.0) -> None:
    """Wait (serving the loop) until ``condition()`` holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not get there in time")
        await asyncio.sleep(0.02)


def docs_folder(tmp: Path, files: int | None) -> Path:
    """milvus-docs, or a copy of its first ``files`` Markdown pages under ``tmp``."""
    source = SHARED / "milvus-docs"
    if files:
        docs = tmp / "milvus-docs"
        picked = sorted(source.rglob("*.md"))[:files]
        for path in picked:
            target = docs / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
        source = docs
    return source


def window_settings(tmp: Path) -> tuple[Any, Any]:
    """(settings, paths) of a fresh data dir under ``tmp``, the starter model in-process."""
    from app.core.paths import AppPaths
    from app.core.settings import Settings

    paths = AppPaths(tmp / "config", tmp / "data", tmp / "cache").ensure()
    base = Settings()
    settings = dataclasses.replace(
        base,
        model=dataclasses.replace(base.model, backend="llamacpp"),
        ui=dataclasses.replace(base.ui, first_run_done=True),
    )
    return settings, paths


COLLECTOR: Any = None  # the app's GUI-thread garbage collector (None with --cpython-gc)
GUI_THREAD_GC = True  # False with --cpython-gc


def qt_app() -> Any:
    """The QApplication, set up as ``run_app`` sets it up (theme, garbage collection on the GUI thread)."""
    global COLLECTOR
    from PySide6.QtWidgets import QApplication

    from app.ui.gui_thread_gc import GuiThreadCollector
    from app.ui.theme import apply_theme

    app = QApplication.instance() or QApplication([])
    apply_theme(app)  # type: ignore[arg-type]
    app.setQuitOnLastWindowClosed(False)  # type: ignore[union-attr]
    if GUI_THREAD_GC and COLLECTOR is None:
        COLLECTOR = GuiThreadCollector(app)
        COLLECTOR.start()
    return app


def in_window(app: Any, tmp: Path, body: Callable[[Any], Awaitable[None]]) -> None:
    """Show a window over a fresh data dir under ``tmp`` (``window_settings``), run ``body(window)``
    on a qasync loop, then close the window, shut it down and remove ``tmp``."""
    import qasync

    from app.ui.main_window import MainWindow
    from app.ui.services import Services

    settings, paths = window_settings(tmp)
    loop = qasync.QEventLoop(app)

    async def main() -> None:
        window = MainWindow(Services(settings, paths))
        if COLLECTOR is not None:
            window.ready.connect(COLLECTOR.settle)  # as run_app: what start-up left is frozen
        window.show()
        await body(window)
        window.close()
        await window.shutdown()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
        shutil.rmtree(tmp, ignore_errors=True)


def watched_monitor() -> StallMonitor:
    """A stall monitor; with FATHOM_BENCH_WATCHDOG, one that explains its longest gaps."""
    global WATCHDOG, SLOTS
    watchdog = os.environ.get("FATHOM_BENCH_WATCHDOG")
    monitor = StallMonitor(explain=bool(watchdog))
    if watchdog:  # "1": late by 150 ms; a larger number: late by that many milliseconds
        WATCHDOG = Watchdog(monitor, int(watchdog) / 1000 if int(watchdog) > 1 else 0.15)
    if os.environ.get("FATHOM_BENCH_SLOTS") and SLOTS is None:
        SLOTS = SlotTimer(blocked_ms=15, busy_ms=15)
        SLOTS.start()
    return monitor


def bench_stall(
    files: int | None, research: bool, question: str, screenshot: Path | None = None
) -> None:
    app = qt_app()
    tmp = Path(tempfile.mkdtemp(prefix="fathom-bench-ui-"))
    source = docs_folder(tmp, files)
    monitor = watched_monitor()

    async def main(window: Any) -> None:
        monitor.start()
        await window.start()
        report(monitor, "window start-up (library opening in the background)")
        monitor.start()
        await asyncio.sleep(10)
        report(monitor, "idle window, 10 s (the machine's own scheduling noise)")
        n = sum(1 for _ in source.rglob("*.md"))
        finished = asyncio.Event()
        failures: list[str] = []

        def ingest_failed(message: str) -> None:
            failures.append(message)
            finished.set()

        window.library_panel.controller.ingestFinished.connect(lambda _e: finished.set())
        window.library_panel.controller.failed.connect(ingest_failed)
        started = time.perf_counter()
        monitor.start()
        window.library_panel.add_paths([source])
        await finished.wait()
        if failures:  # said, not waited on forever
            raise RuntimeError(f"the ingest through the window failed: {failures[0]}")
        report(monitor, f"ingesting {n} milvus-docs files through the window")
        print(
            f"  ingest took {time.perf_counter() - started:.1f} s; {window.library_panel.ingest.progress.format()}"
        )
        if research:
            panel = window.research_panel
            panel.question.setPlainText(question)
            panel.mode.setCurrentIndex(panel.mode.findData("deep"))
            panel.rounds.setValue(1)
            panel.subqueries.setValue(2)
            panel.top_k.setValue(4)
            window.runs.run_options = {"report_max_tokens": 200}
            done = asyncio.Event()
            window.presenter.finished.connect(lambda _e: done.set())
            started = time.perf_counter()
            monitor.start()
            window.run_research()
            await done.wait()
            if window.runs.run_task is not None:  # let the run task finish its clean-up
                await asyncio.wait({window.runs.run_task})
            report(monitor, "research run (deep, starter model)")
            print(
                f"  run took {time.perf_counter() - started:.1f} s, {len(window.presenter.events)} events, "
                f"{window.presenter.flush_count} tree updates, {window.report.render_count} report renders"
            )
            run_id = window.presenter.run_id
            await bench_stop(window, monitor)
            await bench_reopen(window, monitor, run_id)
            await bench_export(window, monitor, tmp / "report.pdf")
        if screenshot is not None:
            await take_screenshot(window, screenshot)

    in_window(app, tmp, main)


def bench_big_library(documents: int) -> None:
    """Open the window on a library of ``documents`` documents in three collections
    (written straight into the catalog, ``tests/big_library.py``); the stall from
    the window's start until the library panel lists every document."""
    app = qt_app()
    tmp = Path(tempfile.mkdtemp(prefix="fathom-bench-big-"))
    settings, paths = window_settings(tmp)
    shares = {"archive": 0.7, "reports": 0.25, "notes": 0.05}
    sizes = {name: int(documents * share) for name, share in shares.items()}
    sizes["archive"] += documents - sum(sizes.values())
    started = time.perf_counter()
    written = fill_library(settings, paths, sizes)
    print(
        f"  wrote {written:,} documents into the catalog in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    monitor = watched_monitor()

    async def main(window: Any) -> None:
        panel = window.library_panel
        monitor.start()
        started = time.perf_counter()
        await window.start()
        opened = time.perf_counter() - started

        def listed() -> bool:
            names = panel.model.collection_names()
            return (
                not panel.model.updating
                and panel.model.document_count() == written
                and all(
                    panel.model.collection_index(n).siblingAtColumn(1).data() == f"{sizes[n]:,}"
                    for n in sizes
                )
                and set(names) == set(sizes)
            )

        await until(listed, 120)
        shown = time.perf_counter() - started
        report(
            monitor,
            f"library open with {written:,} documents (window start until the panel lists them all)",
        )
        print(
            f"  library open after {opened:.2f} s, every document listed after {shown:.2f} s; "
            f"{panel.model.slices} update slices, the longest {panel.model.longest_slice_ms:.1f} ms",
            flush=True,
        )
        monitor.start()
        archive = panel.collection_index("archive")
        panel.tree.expand(archive)
        await asyncio.sleep(0.3)
        bar = panel.tree.verticalScrollBar()
        for _ in range(5):  # scroll to the end of what is shown: more rows are shown each time
            bar.setValue(bar.maximum())
            await asyncio.sleep(0.1)
        report(monitor, "expanding the largest collection and scrolling to its end five times")
        print(
            f"  the view knows {panel.model.rowCount(archive):,} of its {sizes['archive']:,} documents",
            flush=True,
        )

    in_window(app, tmp, main)


# -- silence -----------------------------------------------------------------


def bench_silence(files: int | None, modes: list[str], question: str, rounds: int) -> None:
    """One run per mode through the window: the longest silent gap of each, and the
    status lines the window showed (every distinct text of its state label)."""
    app = qt_app()
    tmp = Path(tempfile.mkdtemp(prefix="fathom-bench-silence-"))
    source = docs_folder(tmp, files)

    async def main(window: Any) -> None:
        await window.start()
        library = await window.services.open_library()
        async for _event in library.ingest([source], "milvus"):
            pass
        await window.library_panel.controller.refresh()
        await window.services.engine()  # the model loads once, before the first run is timed
        shown: list[str] = []

        def on_state(text: str) -> None:
            if not shown or shown[-1] != text:
                shown.append(text)

        window.runs.stateText.connect(on_state)
        window.runs.run_options = {
            "report_max_tokens": 400
        }  # as `fathom ask` runs the starter model
        rows = []
        for mode in modes:
            panel = window.research_panel
            panel.question.setPlainText(question)
            panel.mode.setCurrentIndex(panel.mode.findData(mode))
            panel.rounds.setValue(rounds)
            done = asyncio.Event()
            window.presenter.finished.connect(lambda _e, done=done: done.set())
            shown.clear()
            started = time.perf_counter()
            window.run_research()
            await done.wait()
            if window.runs.run_task is not None:
                await asyncio.wait({window.runs.run_task})
            took = time.perf_counter() - started
            gap = longest_gap(window.presenter.events)
            wait = longest_gap(window.presenter.events, progress_only=True)
            rows.append((mode, gap.seconds, wait.seconds))
            print(f"{mode}: longest silent gap {gap} in a {took:.1f} s run", flush=True)
            print(f"  longest wait for progress (keep-alive lines left out): {wait}", flush=True)
            print(
                f"  {len(shown)} status lines: "
                + " | ".join(shown[:12])
                + (" | …" if len(shown) > 12 else "")
            )
        print(
            "longest silent gap per mode: " + ", ".join(f"{m} {g:.2f} s" for m, g, _ in rows),
            flush=True,
        )
        print(
            "longest wait for progress per mode: "
            + ", ".join(f"{m} {w:.2f} s" for m, _, w in rows),
            flush=True,
        )

    in_window(app, tmp, main)


async def bench_stop(window: Any, monitor: StallMonitor) -> None:
    """Start a longer run, stop it midway (once it has evidence); the stall while it stops."""
    from app.core.events import EvidenceAdded

    window.research_panel.rounds.setValue(3)
    window.run_research()
    await until(lambda: any(isinstance(e, EvidenceAdded) for e in window.presenter.events))
    monitor.start()
    started = time.perf_counter()
    window.stop_research()
    await until(lambda: not window.runs.running)
    took = time.perf_counter() - started
    report(monitor, "stopping a run (deep, midway: once it has evidence)")
    print(f"  stopped in {took:.2f} s; {len(window.presenter.evidence)} pieces of evidence kept")


async def bench_reopen(window: Any, monitor: StallMonitor, run_id: str) -> None:
    """Open the first run again from History (its events read and replayed)."""
    panel = window.history_panel
    await until(lambda: run_id in [r.run_id for r in panel.summaries], 30)
    opened = asyncio.Event()
    window.presenter.finished.connect(lambda _e: opened.set())
    panel.select_run(run_id)
    monitor.start()
    started = time.perf_counter()
    panel.open_button.click()
    await opened.wait()
    await until(panel.open_button.isEnabled, 30)
    took = time.perf_counter() - started
    report(monitor, "opening a run from History")
    print(f"  opened in {took * 1000:.0f} ms; {len(window.presenter.events)} events replayed")


async def bench_export(window: Any, monitor: StallMonitor, path: Path) -> None:
    monitor.start()
    started = time.perf_counter()
    written = window.export_to(path)
    if inspect.isawaitable(written):
        written = await written
    took = time.perf_counter() - started
    report(monitor, "exporting the report to PDF")
    print(f"  exported in {took * 1000:.0f} ms ({'written' if written else 'FAILED'})")


async def take_screenshot(window: object, path: Path) -> None:
    """Select a judged chunk (so the detail pane shows text), then grab the whole window."""
    from app.ui.main_window import MainWindow
    from app.ui.tree_model import KIND_ROLE

    assert isinstance(window, MainWindow)
    window.left_tabs.setCurrentWidget(window.library_panel)
    model = window.tree_model
    for node_id in model.node_ids():
        index = model.index_of(node_id)
        if index.data(KIND_ROLE) == "chunk":
            window.research_panel.tree.setCurrentIndex(index)
            break
    await asyncio.sleep(0.5)  # let the views repaint
    window.grab().save(str(path))
    print(f"screenshot saved to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--files", type=int, default=None, help="ingest only the first N milvus-docs files"
    )
    parser.add_argument("--skip-research", action="store_true")
    parser.add_argument("--skip-launch", action="store_true")
    parser.add_argument("--skip-stall", action="store_true")
    parser.add_argument(
        "--big-library",
        type=int,
        default=10_000,
        help="open a library of N documents (0: skip)",
        metavar="N",
    )
    parser.add_argument("--question", default="What is Milvus Lite and how do I install it?")
    parser.add_argument(
        "--screenshot", type=Path, help="after the run, save a picture of the window here"
    )
    parser.add_argument(
        "--silence", action="store_true", help="only the longest silent gap of a run per mode"
    )
    parser.add_argument("--modes", nargs="+", default=["quick", "deep", "plan", "table", "hds"])
    parser.add_argument("--rounds", type=int, default=2, help="--silence: research rounds per run")
    parser.add_argument(
        "--cpython-gc",
        action="store_true",
        help="leave garbage collection to CPython (as before the GUI-thread collector)",
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    global GUI_THREAD_GC
    GUI_THREAD_GC = not args.cpython_gc
    qt_app()
    if COLLECTOR is not None:
        print(
            "garbage collection: on the GUI thread (app/ui/gui_thread_gc.py), frozen once the library is open"
        )
    else:
        print("garbage collection: CPython's own (--cpython-gc)")
    if args.silence:
        bench_silence(args.files, args.modes, args.question, args.rounds)
        return
    if not args.skip_launch:
        bench_launch()
    if args.big_library:
        bench_big_library(args.big_library)
    if not args.skip_stall:
        bench_stall(args.files, not args.skip_research, args.question, args.screenshot)
    if COLLECTOR is not None:
        young, middle, full = COLLECTOR.collections
        print(
            f"GUI-thread garbage collections: {young} young, {middle} middle, {full} full; "
            f"longest {COLLECTOR.longest_ms:.1f} ms"
        )


if __name__ == "__main__":
    main()
