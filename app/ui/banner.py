"""A dismissable line of text above the report (settings problems, the starter model, a failed run)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

SEPARATOR = "  ·  "


class Banner(QWidget):
    """One compact line above the report: its messages side by side, cut with "…" where
    the column is too narrow (the whole text in its tooltip). ✕ dismisses them;
    ``dismissed`` carries the keys of those that had one (a notice the window keeps
    dismissed, such as the starter model's, until the model changes)."""

    dismissed = Signal(list)  # list[str]: the keys of the messages dismissed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("notice")
        self.label.setWordWrap(False)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setMinimumWidth(40)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.messages: list[str] = []
        self.keys: list[str] = []
        self.hide()

    def add(self, text: str, key: str = "") -> None:
        if text and text not in self.messages:
            self.messages.append(text)
            if key:
                self.keys.append(key)
        self._show_text()
        self.show()

    def text(self) -> str:
        """Every message, whole (the line may show them cut)."""
        return SEPARATOR.join(self.messages)

    def dismiss(self) -> None:
        keys, self.keys, self.messages = self.keys, [], []
        self.hide()
        if keys:
            self.dismissed.emit(keys)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._show_text()

    def _show_text(self) -> None:
        whole = self.text()
        width = max(40, self.label.width())
        self.label.setText(
            self.label.fontMetrics().elidedText(whole, Qt.TextElideMode.ElideRight, width)
        )
        self.label.setToolTip(whole)
