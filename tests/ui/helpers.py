"""Helpers for the window tests: real drag-and-drop, waiting on coroutines."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget
from stall_monitor import waiting

from app.core.paths import app_paths
from app.core.settings import Settings
from app.ui.services import Services

if TYPE_CHECKING:
    from app.research.engine import ResearchEngine

T = TypeVar("T")

MILVUS_FILES = ("about/overview.md", "about/limitations.md", "about/comparison.md", "getstarted/milvus_lite.md")


def make_docs_folder(shared_data: Path, target: Path, broken: bool = True) -> Path:
    """A folder of real documents: four Milvus doc pages, the real PDF and (optionally) a broken PDF."""
    target.mkdir(parents=True, exist_ok=True)
    for rel in MILVUS_FILES:
        shutil.copy(shared_data / "milvus-docs" / rel, target / Path(rel).name)
    shutil.copy(shared_data / "pdf" / "WhatisMilvus.pdf", target / "WhatisMilvus.pdf")
    if broken:
        (target / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    return target


def drop_paths(widget: QWidget, paths: list[Path]) -> tuple[bool, bool]:
    """Drag ``paths`` over ``widget`` and drop them, as a file manager does (file URLs)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    centre = widget.rect().center()
    enter = QDragEnterEvent(
        QPointF(centre), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, enter)
    drop = QDropEvent(
        QPointF(centre), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, drop)
    return enter.isAccepted(), drop.isAccepted()


def drive(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float = 600) -> T:
    """Run ``coro`` to completion on the session loop (for set-up outside a test body)."""
    previous = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        with waiting():
            return loop.run_until_complete(asyncio.wait_for(coro, timeout))
    finally:
        asyncio.events._set_running_loop(previous)


def await_in_test(qtbot: Any, coro: Coroutine[Any, Any, T], timeout_ms: int = 60_000) -> T:
    """Run a coroutine on the running qasync loop and wait for it (the test keeps Qt spinning)."""
    task = asyncio.ensure_future(coro)
    qtbot.waitUntil(task.done, timeout=timeout_ms)
    return task.result()


def answer_confirmation(qtbot: Any, parent: QWidget, yes: bool = True) -> str:
    """Click Yes (or Cancel) on the confirmation box a panel opened; returns its text."""
    box: list[QMessageBox] = []

    def shown() -> bool:
        found = [b for b in parent.findChildren(QMessageBox, "confirmBox") if b.isVisible()]
        box[:] = found
        return bool(found)

    qtbot.waitUntil(shown, timeout=5000)
    text = box[0].text()
    button = box[0].button(QMessageBox.StandardButton.Yes if yes else QMessageBox.StandardButton.Cancel)
    button.click()
    return text


def centre_of(widget: QWidget) -> QPoint:
    return widget.rect().center()


class EngineServices(Services):
    """The window's services with a given engine (no model or Milvus to load)."""

    def __init__(self, engine: ResearchEngine) -> None:
        base = Settings()
        super().__init__(dataclasses.replace(base, ui=dataclasses.replace(base.ui, first_run_done=True)), app_paths())
        self._given = engine

    async def engine(self) -> ResearchEngine:
        return self._given


def run_to_the_end(qtbot: Any, window: Any, timeout_ms: int = 600_000) -> Any:
    """Press Run and wait until the run has finished and is listed in the history; its Finished."""
    from app.core.events import Finished

    with qtbot.waitSignal(window.presenter.finished, timeout=timeout_ms) as done:
        window.research_panel.run_button.click()
    final = done.args[0]
    assert isinstance(final, Finished), final
    qtbot.waitUntil(lambda: not window.runs.running, timeout=10_000)
    qtbot.waitUntil(lambda: final.run_id in [r.run_id for r in window.history_panel.summaries], timeout=10_000)
    return final
