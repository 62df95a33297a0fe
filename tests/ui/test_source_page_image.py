"""The source viewer shows the cited page of a PDF or image as a picture, in a "Page N"
tab next to "Text": rendered from the real file off the GUI loop, when the tab is
first shown; a sentence in its place when the page cannot be shown; no tab for a
source without pages; and a render that finishes late never covers a newer one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from page_files import half_image, marked_pdf, rect_centre
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage

from app.core.models import Chunk, Evidence
from app.ui import page_view as page_view_module
from app.ui.source_viewer import SourceViewer

RED = (220, 30, 30)


def _source(
    path: Path, page: int | None, number: int = 1
) -> tuple[Evidence, Chunk, list[Chunk], None]:
    chunk = Chunk(
        f"c{number}", "d1", "docs", str(path), f"Cited text of {path.name}.", page=page, chunk_no=1
    )
    evidence = Evidence(number, chunk.chunk_id, "q", chunk.text, str(path), page=page)
    return evidence, chunk, [chunk], None


def _viewer(qtbot: Any) -> SourceViewer:
    viewer = SourceViewer()
    qtbot.addWidget(viewer)
    viewer.show()
    qtbot.waitExposed(viewer)
    return viewer


def _shown(viewer: SourceViewer, qtbot: Any) -> QImage:
    """Wait for the page picture, and return it."""
    qtbot.waitUntil(lambda: viewer.page_view.picture() is not None, timeout=10_000)
    image = viewer.page_view.picture()
    assert image is not None
    return image


def _at(image: QImage, fx: float, fy: float) -> QColor:
    return image.pixelColor(int(fx * image.width()), int(fy * image.height()))


def test_the_cited_pdf_page_is_shown_when_its_tab_is_opened(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(pdf, 1))
    assert viewer.page_tab_shown()
    assert viewer.tabs.tabText(viewer.tabs.indexOf(viewer.page_view)) == "&Page 1"
    assert viewer.tabs.currentWidget() is viewer.text  # the cited text is shown first
    assert viewer.tabs.tabBar().isVisible()
    assert (
        viewer.page_view.task is None and viewer.page_view.picture() is None
    )  # nothing rendered yet

    viewer.text.setFocus()
    qtbot.keyClick(
        viewer.text, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier
    )  # the keyboard way
    assert viewer.tabs.currentWidget() is viewer.page_view
    page_one = _shown(viewer, qtbot).copy()

    with qtbot.waitSignal(viewer.page_view.pictureShown, timeout=10_000) as shown:
        viewer.show_source(
            *_source(pdf, 2, number=2)
        )  # the page tab stays open: page 2 is rendered now
    assert shown.args == [2]
    assert viewer.tabs.tabText(viewer.tabs.indexOf(viewer.page_view)) == "&Page 2"
    page_two = _shown(viewer, qtbot)
    assert page_two.size() == page_one.size()
    assert page_two.width() >= 600
    assert page_two != page_one
    fx, fy = rect_centre()
    assert _at(page_two, fx, fy).lightness() < 30  # page 2's black rectangle, where it was drawn
    assert _at(page_one, fx, fy).lightness() > 225  # page 1 is white there
    assert _at(page_two, 0.95, 0.95).lightness() > 225
    assert viewer.page_view.message() == ""
    qtbot.waitUntil(
        viewer.page_view.verticalScrollBar().isVisible
    )  # the page is taller than the view...
    assert not viewer.page_view.horizontalScrollBar().isVisible()  # ...and as wide as it


def test_the_tabs_are_switched_from_the_keyboard(qtbot: Any, aloop: Any, tmp_path: Path) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(pdf, 2))
    viewer.activateWindow()
    qtbot.waitActive(viewer)
    window = viewer.windowHandle()
    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)  # "&Page 2"
    assert viewer.tabs.currentWidget() is viewer.page_view
    _shown(viewer, qtbot)
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.AltModifier)  # "&Text"
    assert viewer.tabs.currentWidget() is viewer.text
    qtbot.keyClick(window, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert viewer.tabs.currentWidget() is viewer.page_view


def test_an_image_source_is_shown_as_its_page(qtbot: Any, aloop: Any, tmp_path: Path) -> None:
    png = half_image(tmp_path / "scan.png", RED)
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(png, 1))
    assert viewer.page_tab_shown()
    viewer.show_page()
    image = _shown(viewer, qtbot)
    assert image.size().toTuple() == (400, 300)  # an image is shown as it is, never enlarged
    left, right = _at(image, 0.25, 0.5), _at(image, 0.75, 0.5)
    assert (left.red(), left.green(), left.blue()) == RED
    assert (right.red(), right.green(), right.blue()) == (255, 255, 255)


def test_a_missing_file_is_said_in_place_of_the_picture(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(tmp_path / "gone.pdf", 3))
    with qtbot.waitSignal(viewer.page_view.messageShown, timeout=10_000) as said:
        viewer.show_page()
    assert "gone.pdf is no longer there" in said.args[0]
    assert viewer.page_view.message() == said.args[0]
    assert viewer.page_view.picture() is None
    assert viewer.page_view.label.textFormat() == Qt.TextFormat.PlainText
    assert viewer.isVisible() and viewer.text.toPlainText() == "Cited text of gone.pdf."


@pytest.mark.parametrize(("name", "page"), [("notes.md", 2), ("paper.pdf", None)])
def test_a_source_without_pages_has_no_page_view(
    qtbot: Any, aloop: Any, tmp_path: Path, name: str, page: int | None
) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    other = tmp_path / name
    other.write_bytes(pdf.read_bytes() if name.endswith(".pdf") else b"# Notes\n")
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(pdf, 2))
    viewer.show_page()
    _shown(viewer, qtbot)
    viewer.show_source(*_source(other, page, number=2))
    assert not viewer.page_tab_shown()
    assert viewer.tabs.count() == 1 and viewer.tabs.currentWidget() is viewer.text
    assert not viewer.tabs.tabBar().isVisible()  # a single "Text" tab: no tab bar at all
    assert viewer.page_view.request is None and viewer.page_view.task is None
    viewer.show_page()  # does nothing without a page
    assert viewer.tabs.currentWidget() is viewer.text


def test_a_late_render_never_covers_the_newer_source(
    qtbot: Any, aloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = marked_pdf(tmp_path / "marked.pdf")
    png = half_image(tmp_path / "scan.png", RED)
    release = threading.Event()
    started: list[str] = []
    rendered: list[str] = []
    real = page_view_module.render_page

    def slow_for_the_pdf(path: str, page: int, width_px: int, quote: str = "") -> bytes:
        started.append(Path(path).name)
        if path == str(pdf):
            release.wait(timeout=10)
        data = real(path, page, width_px, quote)
        rendered.append(Path(path).name)
        return data

    monkeypatch.setattr(page_view_module, "render_page", slow_for_the_pdf)
    viewer = _viewer(qtbot)
    viewer.show_source(*_source(pdf, 2))
    viewer.show_page()
    first = viewer.page_view.task
    assert first is not None
    qtbot.waitUntil(lambda: started == ["marked.pdf"])  # the PDF's page is being rendered
    viewer.show_source(*_source(png, 1, number=2))  # opened before the PDF's page is ready
    newer = _shown(viewer, qtbot).copy()
    release.set()
    qtbot.waitUntil(lambda: "marked.pdf" in rendered and first.done(), timeout=10_000)
    qtbot.waitUntil(
        lambda: viewer.page_view.task is not None and viewer.page_view.task.done(), timeout=10_000
    )
    assert viewer.page_view.picture() == newer  # still the image's page, not the PDF's
    assert viewer.tabs.tabText(viewer.tabs.indexOf(viewer.page_view)) == "&Page 1"


def test_the_cited_passage_is_marked_on_the_page(qtbot: Any, aloop: Any, tmp_path: Path) -> None:
    from scanned_files import PAGE_TEXTS, text_pdf

    pdf = tmp_path / "log.pdf"
    pdf.write_bytes(text_pdf())
    cited = PAGE_TEXTS[1][1]
    chunk = Chunk("c1", "d1", "docs", str(pdf), cited, page=2, chunk_no=1)
    viewer = _viewer(qtbot)
    viewer.show_source(Evidence(1, "c1", "q", cited, str(pdf), page=2), chunk, [chunk], None)
    viewer.show_page()
    image = _shown(viewer, qtbot)
    washed = [  # highlighter yellow over white paper, sampled across the page
        (x, y)
        for y in range(0, image.height(), 2)
        for x in range(0, image.width(), 4)
        if (c := image.pixelColor(x, y)).red() > 240 and c.green() > 200 and c.blue() < 190
    ]
    assert washed, "no part of the page is marked"
    rows = {y for _, y in washed}
    assert max(rows) - min(rows) < image.height() * 0.06  # one line's height, not the page
    assert (
        min(rows) > image.height() * 0.12
    )  # the second line, below the first (at about 10% of the page)
