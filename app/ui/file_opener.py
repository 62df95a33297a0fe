"""Hand a source file to the desktop: open a document, or show a file in its folder.

:func:`app.core.opening.decide_open` says which; this module does it without
ever launching the file itself when it is to be revealed:

- macOS: ``open -R`` (Finder selects the file);
- Windows: ``explorer /select,`` (Explorer selects the file);
- elsewhere: the freedesktop file manager's ``ShowItems`` over D-Bus (the file
  selected), asked asynchronously; if no file manager answers, the containing
  folder is opened instead (a folder opens in the file manager, never runs).

Nothing here blocks: processes start detached and the D-Bus call is
asynchronous.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QDir, QObject, QProcess, QUrl
from PySide6.QtGui import QDesktopServices

from app.core.opening import OpenDecision

log = logging.getLogger(__name__)

_FILE_MANAGER = (
    "org.freedesktop.FileManager1",
    "/org/freedesktop/FileManager1",
    "org.freedesktop.FileManager1",
)


class FileOpener(Protocol):
    """What the source viewer needs from the desktop (tests pass a recorder)."""

    def open_file(self, path: Path) -> bool: ...

    def reveal_file(self, path: Path) -> bool: ...


def carry_out(decision: OpenDecision, opener: FileOpener) -> bool:
    """Do what ``decision`` says; False when nothing could be done."""
    if decision.action == "open":
        return opener.open_file(decision.path)
    if decision.action == "reveal":
        return opener.reveal_file(decision.path)
    return False


class DesktopOpener(QObject):
    """The real desktop. ``file_manager_bus=False`` skips D-Bus (tests, odd desktops)."""

    def __init__(self, parent: QObject | None = None, *, file_manager_bus: bool = True) -> None:
        super().__init__(parent)
        self._use_bus = file_manager_bus
        self._watchers: set[QObject] = set()

    def open_file(self, path: Path) -> bool:
        return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))

    def reveal_file(self, path: Path) -> bool:
        if sys.platform == "darwin":
            started, _pid = QProcess.startDetached("open", ["-R", str(path)])
            return bool(started)
        if sys.platform == "win32":
            started, _pid = QProcess.startDetached(
                "explorer.exe", ["/select,", QDir.toNativeSeparators(str(path))]
            )
            return bool(started)
        if self._use_bus and self._show_items(path):
            return True
        return self._open_folder(path)

    def _open_folder(self, path: Path) -> bool:
        return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent))))

    def _show_items(self, path: Path) -> bool:
        """Ask the file manager to select ``path``; falls back to the folder if it cannot."""
        try:
            from PySide6.QtDBus import QDBusConnection, QDBusMessage, QDBusPendingCallWatcher
        except ImportError:
            return False
        bus = QDBusConnection.sessionBus()
        if not bus.isConnected():
            return False
        message = QDBusMessage.createMethodCall(*_FILE_MANAGER, "ShowItems")
        message.setArguments([[QUrl.fromLocalFile(str(path)).toString()], ""])
        watcher = QDBusPendingCallWatcher(bus.asyncCall(message, 5000), self)
        self._watchers.add(watcher)

        def finished(done: QDBusPendingCallWatcher) -> None:
            self._watchers.discard(done)
            if done.isError():
                log.info(
                    "no file manager answered ShowItems (%s); opening the folder",
                    done.error().name(),
                )
                self._open_folder(path)
            done.deleteLater()

        watcher.finished.connect(finished)
        return True
