"""Non-blocking questions: a message box shown with ``open()`` and awaited.

``exec()`` would spin a nested event loop inside an async slot; ``open()``
plus a future keeps the one loop in charge (and lets tests click the button).
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


async def ask_yes_no(parent: QWidget | None, title: str, text: str, informative: str = "") -> bool:
    box = QMessageBox(parent)
    box.setObjectName("confirmBox")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setText(text)
    if informative:
        box.setInformativeText(informative)
    box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def finished(_result: int) -> None:
        if not future.done():
            future.set_result(box.clickedButton() is box.button(QMessageBox.StandardButton.Yes))

    box.finished.connect(finished)
    box.open()
    try:
        return await future
    finally:
        box.deleteLater()


def show_error(parent: QWidget | None, title: str, text: str) -> QMessageBox:
    """A non-modal error box (returns at once)."""
    return _show(parent, "errorBox", QMessageBox.Icon.Warning, title, text)


def show_message(
    parent: QWidget | None, title: str, text: str, informative: str = ""
) -> QMessageBox:
    """A non-modal information box (returns at once)."""
    return _show(parent, "messageBox", QMessageBox.Icon.Information, title, text, informative)


def _show(
    parent: QWidget | None,
    name: str,
    icon: QMessageBox.Icon,
    title: str,
    text: str,
    informative: str = "",
) -> QMessageBox:
    box = QMessageBox(parent)
    box.setObjectName(name)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setText(text)
    if informative:
        box.setInformativeText(informative)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
