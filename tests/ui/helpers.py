"""Helpers for the window tests: real drag-and-drop, waiting on coroutines."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget
from stall_monitor import waiting

from app.core.paths import AppPaths, app_paths
from app.core.settings import Settings
from app.ui.main_window import MainWindow
from app.ui.services import Services

if TYPE_CHECKING:
    from app.research.engine import ResearchEngine
    from app.ui.research_panel import ResearchPanel

T = TypeVar("T")

MILVUS_FILES = (
    "about/overview.md",
    "about/limitations.md",
    "about/comparison.md",
    "getstarted/milvus_lite.md",
)


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
        centre,
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(widget, enter)
    drop = QDropEvent(
        QPointF(centre),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
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

    qtbot.waitUntil(
        shown, timeout=15_000
    )  # on a loaded machine the box, opened by a task, can be slow
    text = box[0].text()
    button = box[0].button(
        QMessageBox.StandardButton.Yes if yes else QMessageBox.StandardButton.Cancel
    )
    button.click()
    return text


def centre_of(widget: QWidget) -> QPoint:
    return widget.rect().center()


class EngineServices(Services):
    """The window's services with a given engine (no model or Milvus to load)."""

    def __init__(self, engine: ResearchEngine) -> None:
        base = Settings()
        super().__init__(
            dataclasses.replace(base, ui=dataclasses.replace(base.ui, first_run_done=True)),
            app_paths(),
        )
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
    qtbot.waitUntil(
        lambda: final.run_id in [r.run_id for r in window.history_panel.summaries], timeout=10_000
    )
    return final


@contextmanager
def real_window(
    qloop: asyncio.AbstractEventLoop,
    home: Path,
    sources: list[Path],
    collection: str,
    *,
    run_options: dict[str, Any],
    size: tuple[int, int] | None = None,
) -> Iterator[MainWindow]:
    """The real window over a fresh home: the starter model (llama.cpp, temperature 0), the
    real library with ``sources`` ingested into ``collection``, the model loaded once.

    For a module-scoped fixture: set-up and shutdown run with ``drive``."""
    paths = AppPaths(home / "config", home / "data", home / "cache").ensure()
    base = Settings()
    settings = dataclasses.replace(
        base,
        model=dataclasses.replace(base.model, backend="llamacpp", temperature=0.0),
        ui=dataclasses.replace(base.ui, first_run_done=True),
        ingest=dataclasses.replace(base.ingest, watch_folders=False),
    )
    services = Services(settings, paths)
    win = MainWindow(services)
    win.runs.run_options = run_options
    if size is not None:
        win.resize(*size)
    win.show()

    async def setup() -> None:
        await win.start()
        library = await services.open_library()
        async for _event in library.ingest(sources, collection):
            pass
        await win.library_panel.controller.refresh()
        await services.engine()  # load the model once for the module

    drive(qloop, setup())
    yield win
    drive(qloop, win.shutdown())
    win.close()
    win.deleteLater()


def fill_research_panel(
    panel: ResearchPanel,
    question: str,
    mode: str,
    *,
    rounds: int,
    top_k: int,
    subqueries: int | None = None,
) -> None:
    """Ask ``question`` in ``mode`` over every collection, with this budget (the sub-questions
    left as they are when ``subqueries`` is None)."""
    panel.question.setPlainText(question)
    panel.mode.setCurrentIndex(panel.mode.findData(mode))
    panel.set_scope([])
    panel.rounds.setValue(rounds)
    if subqueries is not None:
        panel.subqueries.setValue(subqueries)
    panel.top_k.setValue(top_k)


@contextmanager
def started_window(qtbot: Any, *, watch_folders: bool = False) -> Iterator[MainWindow]:
    """The window with default settings (FATHOM_HOME: the test's), started: its library open.
    Folders are not followed unless asked: a test that changes files re-scans when it says so."""
    base = Settings()
    settings = dataclasses.replace(
        base, ingest=dataclasses.replace(base.ingest, watch_folders=watch_folders)
    )
    services = Services(settings, app_paths().ensure())
    win = MainWindow(services)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.ready, timeout=120_000):
        win.start()
    assert services.library is not None, services.library_error
    yield win
    await_in_test(qtbot, win.shutdown(), 60_000)
