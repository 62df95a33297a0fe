"""How long the GUI thread goes without serving its event loop.

A 10 ms ``QTimer`` runs on the GUI thread; the gaps between its ticks are what
a user feels (a gap of 500 ms is half a second of frozen window). Used by
``tests/bench/bench_ui.py`` to report the stall and by the window tests as a
guard (a generous bound, so a loaded machine does not make it flaky).

The loop guard of the window tests (``tests/ui/conftest.py``) is built from
:class:`SlotTimer` (each dispatch of ``app/ui`` code, timed) and
:class:`WaitGaps` (the loop's gaps while a test waits on it).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

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
    """Ticks every ``TICK_MS`` on the GUI thread. With ``explain``, each tick also reads the
    thread's CPU time and runqueue wait (:class:`_ThreadClock`), so :meth:`worst` can say
    of the longest gaps whether the GUI thread computed (Python or Qt), waited for a CPU
    (other processes on a loaded machine) or was blocked (the GIL held by a worker thread,
    a lock, I/O)."""

    def __init__(self, explain: bool = False) -> None:
        self.ticks: list[float] = []
        self.clocks: list[tuple[float, float]] = []
        self._clock: _ThreadClock | None = None
        self._explain = explain
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        self.ticks.append(time.perf_counter())
        if self._clock is not None:
            self.clocks.append(self._clock.read())

    def start(self) -> None:
        if self._explain and self._clock is None:
            self._clock = _ThreadClock()
        self.ticks = []
        self.clocks = []
        self._tick()
        self.timer.start()

    def stop(self) -> Stall | None:
        """Stop measuring (the time since the last tick counts as a gap); None if never started."""
        self.timer.stop()
        self._tick()  # a stall running up to now counts too
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

    def worst(self, n: int = 5) -> list[tuple[float, float, str]]:
        """The ``n`` longest gaps of the last measurement: (start, seconds since the measurement
        began; its length in ms; what the GUI thread did meanwhile, when ``explain``)."""
        if len(self.ticks) < 2:
            return []
        gaps = sorted(range(len(self.ticks) - 1), key=lambda i: self.ticks[i] - self.ticks[i + 1])[
            :n
        ]
        out = []
        for i in gaps:
            wall = (self.ticks[i + 1] - self.ticks[i]) * 1000
            said = ""
            if len(self.clocks) == len(self.ticks):
                cpu = (self.clocks[i + 1][0] - self.clocks[i][0]) * 1000
                wait = (self.clocks[i + 1][1] - self.clocks[i][1]) * 1000
                said = (
                    f"on a CPU {cpu:.0f} ms, waiting for one {wait:.0f} ms, "
                    f"blocked {max(0.0, wall - cpu - wait):.0f} ms"
                )
            out.append((self.ticks[i] - self.ticks[0], wall, said))
        return out


# -- the loop guard of the window tests ----------------------------------------

UI_DIR = str(Path(__file__).resolve().parents[1] / "app" / "ui") + os.sep
TESTS_DIR = str(Path(__file__).resolve().parent) + os.sep


@dataclass(frozen=True)
class Dispatch:
    """One run of ``app/ui`` code entered from the event loop, in milliseconds: how long it
    held the loop (wall), ran on a CPU, waited for a CPU (a loaded machine), and was
    blocked (the rest: sleeping, waiting on I/O, a lock, the keyring, the GIL)."""

    name: str
    wall_ms: float
    cpu_ms: float
    runnable_ms: float

    @property
    def blocked_ms(self) -> float:
        return max(0.0, self.wall_ms - self.cpu_ms - self.runnable_ms)

    def __str__(self) -> str:
        return (
            f"{self.name} held the loop {self.wall_ms:.0f} ms (blocked {self.blocked_ms:.0f} ms, "
            f"on a CPU {self.cpu_ms:.0f} ms, waiting for one {self.runnable_ms:.0f} ms)"
        )


class _ThreadClock:
    """This thread's CPU time and runqueue wait, in seconds (Linux ``schedstat``; elsewhere
    the CPU time alone, and no wait)."""

    def __init__(self) -> None:
        self._fd: int | None = None
        try:
            self._fd = os.open(
                f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY
            )
            on_cpu, _wait = self._schedstat()
            if on_cpu == 0:  # no scheduler statistics in this kernel
                self.close()
        except OSError:
            self._fd = None

    def _schedstat(self) -> tuple[float, float]:
        assert self._fd is not None
        on_cpu, wait, *_ = os.pread(self._fd, 128, 0).split()
        return int(on_cpu) / 1e9, int(wait) / 1e9

    def read(self) -> tuple[float, float]:
        if self._fd is None:
            return time.thread_time(), 0.0
        return self._schedstat()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SlotTimer:
    """Times every dispatch of ``app/ui`` code on the GUI thread: a slot, a virtual
    Qt calls, one step of a coroutine (from resume to its next ``await``).

    A ``sys.setprofile`` hook on the GUI thread sees each Python frame start and
    end (a coroutine's frame at each resume and suspension); the outermost
    ``app/ui`` frame is timed, with everything it calls (engine, Qt, a blocking
    call). Frames the test body calls directly are not dispatches of the loop
    and are not timed. A dispatch is too slow when it was *blocked* longer than
    ``blocked_ms`` or ran on a CPU longer than ``busy_ms``; the time it spent
    waiting for a CPU on a loaded machine counts against neither.
    """

    def __init__(self, blocked_ms: float, busy_ms: float) -> None:
        self.blocked_ms = blocked_ms
        self.busy_ms = busy_ms
        self.slow: list[Dispatch] = []
        self.longest = Dispatch("nothing", 0.0, 0.0, 0.0)
        self.dispatches = 0
        self._extra: set[CodeType] = set()
        self._watched: dict[CodeType, bool] = {}
        self._depth = 0
        self._counted = False
        self._started = (0.0, 0.0, 0.0)
        self._name = ""
        self._clock: _ThreadClock | None = None
        self._previous: Any = None

    def watch(self, fn: Callable[..., Any]) -> None:
        """Time ``fn`` too, as if it were ``app/ui`` code (for the test that proves the guard)."""
        self._extra.add(fn.__code__)
        self._watched.pop(fn.__code__, None)

    def start(self) -> None:
        self._clock = _ThreadClock()
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)

    def stop(self) -> None:
        sys.setprofile(self._previous)
        if self._clock is not None:
            self._clock.close()

    def _is_watched(self, code: CodeType) -> bool:
        watched = self._watched.get(code)
        if watched is None:
            watched = self._watched[code] = code in self._extra or code.co_filename.startswith(
                UI_DIR
            )
        return watched

    def _now(self) -> tuple[float, float, float]:
        assert self._clock is not None
        return (time.perf_counter(), *self._clock.read())

    def _profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            if not self._is_watched(frame.f_code):
                return
            self._depth += 1
            if self._depth == 1:
                caller = frame.f_back
                self._counted = caller is None or not caller.f_code.co_filename.startswith(
                    TESTS_DIR
                )
                if self._counted:
                    self._name = frame.f_code.co_qualname
                    self._started = self._now()
        elif event == "return" and self._depth and self._is_watched(frame.f_code):
            self._depth -= 1
            if self._depth == 0 and self._counted:
                ended = self._now()
                wall, cpu, runnable = (
                    (b - a) * 1000 for a, b in zip(self._started, ended, strict=True)
                )
                dispatch = Dispatch(self._name, wall, cpu, runnable)
                self.dispatches += 1
                if wall > self.longest.wall_ms:
                    self.longest = dispatch
                if dispatch.blocked_ms > self.blocked_ms or cpu > self.busy_ms:
                    self.slow.append(dispatch)


class WaitGaps:
    """The longest time the loop went unserved while a test waited on it.

    A 10 ms timer ticks on the GUI thread; only the gaps inside a wait count
    (``waiting()``: pytest-qt's waits and ``helpers.drive``), so the test body's
    own work between waits is not taken for a frozen window. A watchdog thread
    notes where the GUI thread was when a gap passes ``SAMPLE_AFTER_MS`` (only
    with ``FATHOM_LOOP_GUARD_WHERE=1``: reading another thread's frames while it
    runs is the one exotic thing here, and a full-suite run under heavy load
    died once with a segfault in Qt's event processing; off by default), so the
    longest gap comes with the code that held the loop.
    """

    SAMPLE_AFTER_MS = 250.0

    def __init__(self) -> None:
        self.longest_ms = 0.0
        self.longest_where = ""
        self.gaps = 0
        self._depth = 0
        self._last = 0.0
        self._seen: list[str] = []  # where the GUI thread was during the current gap
        self._gui = threading.get_ident()
        self._stopped = threading.Event()
        self._watchdog = threading.Thread(
            target=self._watch, name="loop-guard-watchdog", daemon=True
        )
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._gui = threading.get_ident()
        self.timer.start()
        _ACTIVE.append(self)
        if os.environ.get("FATHOM_LOOP_GUARD_WHERE") == "1":
            self._watchdog.start()

    def stop(self) -> None:
        self._stopped.set()
        self.timer.stop()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def enter(self) -> None:
        if self._depth == 0:
            self._last = time.perf_counter()
            self._seen = []
        self._depth += 1

    def leave(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._gap()

    def _tick(self) -> None:
        if self._depth:
            self._gap()

    def _gap(self) -> None:
        now = time.perf_counter()
        self.gaps += 1
        gap_ms = (now - self._last) * 1000
        if gap_ms > self.longest_ms:
            self.longest_ms = gap_ms
            self.longest_where = " / ".join(dict.fromkeys(self._seen))
        self._last = now
        self._seen = []

    def _watch(self) -> None:
        while not self._stopped.wait(self.SAMPLE_AFTER_MS / 5000):
            if self._depth and (time.perf_counter() - self._last) * 1000 > self.SAMPLE_AFTER_MS:
                frame = sys._current_frames().get(self._gui)
                if frame is not None:
                    self._seen.append(_where(frame))


def _where(frame: FrameType) -> str:
    """The innermost frames of a stack, as ``file:line function`` (the last three)."""
    stack = traceback.extract_stack(frame)[-3:]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))


_ACTIVE: list[WaitGaps] = []


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """The test waits on the loop meanwhile (the gaps the loop leaves count)."""
    active = list(_ACTIVE)
    for gaps in active:
        gaps.enter()
    try:
        yield
    finally:
        for gaps in active:
            gaps.leave()


class LoopGuard:
    """Both checks of the window tests, with their bounds (see ``tests/ui/conftest.py``)."""

    def __init__(self, blocked_ms: float, busy_ms: float, gap_bound_ms: float) -> None:
        self.slots = SlotTimer(blocked_ms, busy_ms)
        self.gaps = WaitGaps()
        self.gap_bound_ms = gap_bound_ms

    def start(self) -> None:
        self.gaps.start()
        self.slots.start()

    def stop(self) -> None:
        self.slots.stop()
        self.gaps.stop()

    def problems(self) -> list[str]:
        found = [str(slow) for slow in self.slots.slow]
        if self.gaps.longest_ms > self.gap_bound_ms:
            where = (
                f" (the GUI thread was in {self.gaps.longest_where})"
                if self.gaps.longest_where
                else ""
            )
            found.append(
                f"the loop went {self.gaps.longest_ms:.0f} ms unserved while the test waited on it{where}"
            )
        return found

    def check(self) -> None:
        """Raise AssertionError naming what blocked the loop, if anything did."""
        problems = self.problems()
        if problems:
            raise AssertionError(
                f"the GUI loop was held (a dispatch of app/ui: blocked at most {self.slots.blocked_ms:.0f} ms, on a "
                f"CPU at most {self.slots.busy_ms:.0f} ms; the loop: at most {self.gap_bound_ms:.0f} ms unserved): "
                + "; ".join(problems)
            )

    def forgive(self) -> None:
        """Forget what was caught so far (the test that proves the guard caught it on purpose)."""
        self.slots.slow.clear()
        self.gaps.longest_ms = 0.0
        self.gaps.longest_where = ""

    def summary(self) -> str:
        return (
            f"longest app/ui dispatch: {self.slots.longest} ({self.slots.dispatches} timed); "
            f"longest loop gap while waiting: {self.gaps.longest_ms:.0f} ms ({self.gaps.gaps} gaps)"
        )
