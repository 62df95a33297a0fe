"""The installed PySide6 keeps Python's reference counts: PySide6 6.12.0 on Python 3.11
dropped a reference to None at every call of a Qt method that returns nothing and one
to True at every signal emit, until Python aborted the app ("deallocating None") after
some thousands of files ingested. pyproject.toml keeps it out; this checks what runs."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

CALLS = 2000
NOISE = 50  # other references made or dropped meanwhile (none expected in these loops)


class _Emitter(QObject):
    ping = Signal()


def test_calls_returning_nothing_keep_none_alive(qtbot: QtBot) -> None:
    label = QLabel()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for i in range(CALLS):
        label.setText(str(i % 7))
    assert abs(sys.getrefcount(None) - before) < NOISE


def test_signal_emits_keep_true_alive() -> None:
    emitter = _Emitter()
    received: list[int] = []
    emitter.ping.connect(lambda: received.append(1))
    before = sys.getrefcount(True)
    for _ in range(CALLS):
        emitter.ping.emit()
    assert len(received) == CALLS
    assert abs(sys.getrefcount(True) - before) < NOISE
