"""``fathom`` with no arguments: the window, on qasync's event loop.

Start-up shows the window first (PySide6 and app.core only, a fraction of a
second) and then loads the heavy stack — Docling, pymilvus, onnxruntime,
llama.cpp — in an executor, so the window never waits on it. A second
Fathom on the same data dir is refused with a message box; an invalid
settings file starts with defaults and says so.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from app.core.errors import StoreLocked
from app.core.paths import AppPaths, app_paths
from app.core.settings import load_settings
from app.ui.pyside_import_hook import make_feature_check_safe

# Before anything else is imported: PySide6's import hook must not set off imports of its own
# (pydantic's lazy attributes) from inside Docling's, in whatever thread (pyside_import_hook.py).
make_feature_check_safe()

if TYPE_CHECKING:
    from app.store.lock import InstanceLock

log = logging.getLogger(__name__)

STARTUP_ENV = "FATHOM_STARTUP_REPORT"  # set: print "window shown after N s" (benchmarks)
QUIT_AFTER_ENV = (
    "FATHOM_QUIT_AFTER_SHOWN"  # set: close the window once shown (benchmarks, smoke tests)
)


def make_application(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    app = QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("Fathom")
    app.setOrganizationName("Fathom")
    app.setApplicationDisplayName("Fathom")
    app.setDesktopFileName("fathom")
    return app


def acquire_or_explain(paths: AppPaths) -> InstanceLock | QMessageBox:
    """The data dir's lock, or (another Fathom has it) a message box that says so."""
    from app.store.lock import acquire_instance_lock

    try:
        return acquire_instance_lock(paths)
    except StoreLocked as exc:
        box = QMessageBox(QMessageBox.Icon.Warning, "Fathom is already open", exc.message)
        box.setObjectName("alreadyOpen")
        box.setInformativeText(exc.hint)
        box.setStandardButtons(QMessageBox.StandardButton.Ok)
        return box


def run_app(argv: list[str] | None = None) -> int:
    """Open the window and run until it is closed; returns the exit code."""
    started = time.perf_counter()
    logging.basicConfig(level=os.environ.get("FATHOM_LOG", "WARNING"))
    app = make_application(argv)
    from app.ui.theme import app_icon, apply_theme, follow_system

    paths = app_paths().ensure()
    lock = acquire_or_explain(paths)
    if isinstance(lock, QMessageBox):
        print(f"Fathom is already open: {lock.text()} {lock.informativeText()}", file=sys.stderr)
        if os.environ.get(QUIT_AFTER_ENV):
            QTimer.singleShot(int(float(os.environ[QUIT_AFTER_ENV]) * 1000), lock.accept)
        lock.exec()
        return 1
    settings, problem = load_settings(paths.settings_file)
    apply_theme(app, settings.ui.theme)
    app.setWindowIcon(app_icon())
    app.setQuitOnLastWindowClosed(False)

    from app.ui.gui_thread_gc import GuiThreadCollector
    from app.ui.main_window import MainWindow
    from app.ui.services import Services

    collector = GuiThreadCollector(
        app
    )  # cycles holding Qt objects must die on this thread, never a worker's
    collector.start()

    services = Services(settings, paths, startup_lock=lock)
    follow_system(app, lambda: services.settings.ui.theme)

    async def main() -> int:
        window = MainWindow(services, problem)
        closed = asyncio.Event()
        window.closed.connect(closed.set)
        window.ready.connect(collector.settle)
        app.aboutToQuit.connect(closed.set)
        window.show()
        if os.environ.get(STARTUP_ENV):
            print(f"window shown after {time.perf_counter() - started:.3f} s", flush=True)
        if os.environ.get(QUIT_AFTER_ENV):
            QTimer.singleShot(int(float(os.environ[QUIT_AFTER_ENV]) * 1000), window.close)
        window.start()
        await closed.wait()
        await window.shutdown()
        return 0

    import qasync

    try:
        return int(qasync.run(main()))
    finally:
        collector.stop()
        lock.close()
