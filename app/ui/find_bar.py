"""Ctrl+F: find text in the report."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent, QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QTextBrowser, QWidget


class _FindEdit(QLineEdit):
    def __init__(self, bar: FindBar) -> None:
        super().__init__(bar)
        self._bar = bar

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            backward = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            self._bar.find_text(backward=backward)
            return
        super().keyPressEvent(event)


class FindBar(QWidget):
    def __init__(self, target: QTextBrowser, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.target = target
        self.edit = _FindEdit(self)
        self.edit.setObjectName("findText")
        self.edit.setPlaceholderText("Find in report")
        self.edit.textChanged.connect(lambda _text: self.find_text(from_start=True))
        self.result = QLabel("")
        previous = QPushButton("Previous")
        previous.clicked.connect(lambda: self.find_text(backward=True))
        following = QPushButton("Next")
        following.clicked.connect(lambda: self.find_text())
        close = QPushButton("Close")
        close.clicked.connect(self.close_bar)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(previous)
        layout.addWidget(following)
        layout.addWidget(self.result)
        layout.addWidget(close)
        self.hide()

    def open_bar(self) -> None:
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.target.setFocus()

    def find_text(self, backward: bool = False, from_start: bool = False) -> bool:
        text = self.edit.text()
        if not text:
            self.result.setText("")
            return False
        if from_start:
            cursor = self.target.textCursor()
            cursor.movePosition(cursor.MoveOperation.Start)
            self.target.setTextCursor(cursor)
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        found = self.target.find(text, flags)
        if not found:  # wrap around
            cursor = self.target.textCursor()
            cursor.movePosition(
                cursor.MoveOperation.End if backward else cursor.MoveOperation.Start
            )
            self.target.setTextCursor(cursor)
            found = self.target.find(text, flags)
        self.result.setText("" if found else "Not found")
        return found
