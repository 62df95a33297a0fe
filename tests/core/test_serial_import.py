"""First imports of large packages take turns across threads (app/core/serial_import.py).

Two threads importing packages that share modules can be handed a partially
initialised module by Python's import deadlock breaker; the installed build's
self-test once failed so. These tests use real modules written to a temporary
folder and real threads: the modules' bodies record who is inside them.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import serial_import as serial

BODY = """
import _serial_gate as gate
gate.enter(__name__)
"""


class Gate(types.ModuleType):
    """Shared with the modules' bodies: who is inside an import, and whether two were at once."""

    def __init__(self, names: tuple[str, str]) -> None:
        super().__init__("_serial_gate")
        self.names = names  # the module imported first, and the one imported second
        self.inside: list[str] = []
        self.overlaps: list[tuple[str, ...]] = []
        self.seen_initialising: dict[str, bool] = {}
        self.second_entered = threading.Event()
        self.hold_first = threading.Event()  # set: the first module waits until released
        self.release_first = threading.Event()
        self.first_inside = threading.Event()
        self.lock = threading.Lock()

    def enter(self, name: str) -> None:
        with self.lock:
            if self.inside:
                self.overlaps.append((*self.inside, name))
            self.inside.append(name)
        self.seen_initialising[name] = not serial.imported(name)
        if name.endswith("_one"):
            self.first_inside.set()
            if self.hold_first.is_set():
                assert self.release_first.wait(timeout=30), (
                    "the test never released the first import"
                )
            else:
                # long enough for the second thread, already running, to start its import
                # if nothing stops it; with the lock it cannot, and this times out
                self.second_entered.wait(timeout=1.0)
        else:
            self.second_entered.set()
        with self.lock:
            self.inside.remove(name)


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    tag = tmp_path.name.replace("-", "_")
    gate = Gate((f"serial_{tag}_one", f"serial_{tag}_two"))
    for name in gate.names:
        (tmp_path / f"{name}.py").write_text(BODY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "_serial_gate", gate)
    yield gate
    for name in gate.names:
        sys.modules.pop(name, None)


def _import_in_thread(
    name: str, errors: list[BaseException], ready: threading.Event | None = None
) -> threading.Thread:
    def work() -> None:
        try:
            if ready is not None:
                ready.set()
            with serial.serial_import(name):
                importlib.import_module(name)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def test_two_threads_first_imports_take_turns(gate: Gate) -> None:
    first, second = gate.names
    errors: list[BaseException] = []
    one = _import_in_thread(first, errors)
    assert gate.first_inside.wait(timeout=30)
    second_ready = threading.Event()
    two = _import_in_thread(second, errors, ready=second_ready)
    assert second_ready.wait(timeout=30)
    one.join(timeout=60)
    two.join(timeout=60)
    assert not one.is_alive() and not two.is_alive()
    assert errors == []
    assert gate.overlaps == [], f"imports ran at once: {gate.overlaps}"
    assert first in sys.modules and second in sys.modules
    assert gate.seen_initialising == {
        first: True,
        second: True,
    }  # inside its body a module is not yet "imported"
    assert serial.imported(first) and serial.imported(second)


def test_a_module_already_imported_never_waits_behind_another_import(gate: Gate) -> None:
    first, _second = gate.names
    gate.hold_first.set()
    errors: list[BaseException] = []
    one = _import_in_thread(first, errors)
    try:
        assert gate.first_inside.wait(timeout=30)
        assert not serial.imported(first)  # it is still running in the other thread
        assert serial.imported("json")
        done = threading.Event()

        def use_json() -> None:
            with serial.serial_import("json"):
                import json  # noqa: F401
            done.set()

        user = threading.Thread(target=use_json)
        user.start()
        # the other import still holds the lock: this one must not need it
        assert done.wait(timeout=10), "an import of an imported module waited behind another import"
        assert one.is_alive()
        user.join(timeout=10)
    finally:
        gate.release_first.set()
        one.join(timeout=60)
    assert errors == []
    assert serial.imported(first)
