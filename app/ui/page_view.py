"""The source viewer's "Page N" tab: the cited page of a PDF or image, as a picture.

:meth:`PageView.set_source` says which page to show; nothing is read until
:meth:`PageView.load` is called (the viewer calls it when the tab is shown). The
page is rendered by :func:`app.core.page_images.render_page` and decoded into a
``QImage`` off the GUI loop (``run_blocking``); only the ``QPixmap`` is made on the
GUI thread. A render that finishes after another source was set is dropped: its
task is cancelled, and a result that still arrives is checked against the current
request. A page that cannot be shown is replaced by the sentence that says why.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QScrollArea, QStyle, QWidget

from app.core.page_images import MAX_WIDTH_PX, PageImageError, render_page
from app.ui.tasks import TaskKeeper, run_blocking

log = logging.getLogger(__name__)

MIN_REQUEST_PX = 600  # narrower windows still get a page sharp enough to zoom into by widening


@dataclass(frozen=True)
class PageRequest:
    """Which page of which local file is shown."""

    path: str
    page: int
    quote: str = ""  # the cited passage, marked on the page where its text layer has it


def page_picture(path: str, page: int, width_px: int, quote: str = "") -> QImage:
    """The page rendered and decoded (blocks: call it off the GUI loop)."""
    image = QImage.fromData(render_page(path, page, width_px, quote))
    if image.isNull():
        raise PageImageError(
            f"The picture of page {page} of {Path(path).name} could not be decoded."
        )
    return image


class PageView(QScrollArea):
    """A scrollable picture of one page, or a sentence in its place."""

    pictureShown = Signal(int)  # the page number now shown
    messageShown = Signal(str)  # why no picture is shown

    def __init__(self, tasks: TaskKeeper, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tasks = tasks
        self.request: PageRequest | None = None
        self.task: asyncio.Task[None] | None = None
        self._loaded: PageRequest | None = None  # the request whose load was started
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.setWidget(self.label)
        self.setWidgetResizable(True)
        self.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.setFocusPolicy(
            Qt.FocusPolicy.StrongFocus
        )  # arrow keys and Page Up/Down scroll the page

    def set_source(self, request: PageRequest | None) -> None:
        """Show ``request`` next (nothing is read yet); a render still running is dropped."""
        self._drop_running()
        self.request = request
        self._loaded = None
        self._show_message("")
        if request is not None:
            self.setAccessibleName(f"Page {request.page} of {Path(request.path).name}")

    def load(self) -> asyncio.Task[None] | None:
        """Render the requested page off the loop, once per request; the task, or None
        when there is nothing (new) to load."""
        if self.request is None or self._loaded == self.request:
            return None
        self._loaded = self.request
        self._show_message(f"Rendering page {self.request.page}…")
        self.task = self._tasks.start(
            self._load(self.request, self._request_width()), "render the cited page"
        )
        return self.task

    def picture(self) -> QImage | None:
        """The page picture shown, or None when a sentence is shown instead."""
        pixmap = self.label.pixmap()
        return None if pixmap.isNull() else pixmap.toImage()

    def message(self) -> str:
        """The sentence shown in place of the picture ("" while a picture is shown)."""
        return self.label.text()

    async def _load(self, request: PageRequest, width: int) -> None:
        try:
            image = await run_blocking(
                page_picture,
                request.path,
                request.page,
                width,
                request.quote,
                name="render the cited page",
            )
        except PageImageError as exc:
            self._fail(request, str(exc))
            return
        except (
            Exception
        ) as exc:  # never let a bad file break the viewer: say so in place of the picture
            log.warning("rendering page %s of %s failed", request.page, request.path, exc_info=exc)
            self._fail(
                request,
                f"Page {request.page} cannot be shown ({exc}). Open the original to read it.",
            )
            return
        if request != self.request:  # another source was opened meanwhile
            return
        pixmap = QPixmap.fromImage(image)
        pixmap.setDevicePixelRatio(self.devicePixelRatioF())
        self.label.setMargin(0)
        self.label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.label.setPixmap(pixmap)
        self.pictureShown.emit(request.page)

    def _fail(self, request: PageRequest, sentence: str) -> None:
        if request == self.request:  # a failure of an older request is not news
            self._show_message(sentence)
            self.messageShown.emit(sentence)

    def _show_message(self, text: str) -> None:
        self.label.clear()
        self.label.setMargin(12)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setText(text)

    def _drop_running(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None

    def _request_width(self) -> int:
        """As wide as the view with its vertical scroll bar (a page is taller than the view),
        in device pixels, within the renderer's cap."""
        scroll_bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        inner = self.width() - 2 * self.frameWidth() - scroll_bar
        device_width = int(inner * self.devicePixelRatioF())
        return max(MIN_REQUEST_PX, min(device_width, MAX_WIDTH_PX))
