"""A dismissable line of text above the report (settings problems, the starter model, a failed run)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget


class Banner(QWidget):
    """A dismissable line of text above the report (settings problems, starter model)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setObjectName("notice")
        self.label.setWordWrap(True)
        close = QPushButton("✕")
        close.setFlat(True)
        close.setFixedWidth(28)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.messages: list[str] = []
        self.hide()

    def add(self, text: str) -> None:
        if text and text not in self.messages:
            self.messages.append(text)
        self.label.setText("\n".join(self.messages))
        self.show()
