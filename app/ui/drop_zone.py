"""A frame that accepts folders and files dragged from the system file manager."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDragLeaveEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget


def local_paths(event: QDropEvent | QDragEnterEvent | QDragMoveEvent) -> list[Path]:
    """The local files and folders a drag carries (remote URLs are ignored)."""
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [
        Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile() and url.toLocalFile()
    ]


class DropZone(QFrame):
    """Emits :attr:`pathsDropped` with the dropped paths."""

    pathsDropped = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dropZone")
        self.setAcceptDrops(True)
        self.setMinimumHeight(64)
        self.hint = QLabel("Drop folders or files here to add them\nor use “Add folder…” (Ctrl+O)")
        self.hint.setObjectName("dropHint")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.addWidget(self.hint)

    def _set_active(self, active: bool) -> None:
        self.setProperty("dragActive", "true" if active else "false")
        self.style().unpolish(self)
        self.style().polish(self)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event):
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
            self._set_active(True)
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if local_paths(event):
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
        else:
            event.ignore()

    def dragLeaveEvent(self, event: QDragLeaveEvent) -> None:
        self._set_active(False)
        event.accept()

    def dropEvent(self, event: QDropEvent) -> None:
        self._set_active(False)
        paths = local_paths(event)
        if not paths:
            event.ignore()
            return
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
        self.pathsDropped.emit(paths)
