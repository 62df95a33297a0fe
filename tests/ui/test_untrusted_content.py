"""Hostile text from a model or a document: rendered as text, loads nothing, links nowhere.

A report and a source that hold ``<img src=http://…>``, ``<script>``,
``<iframe>``, ``<link>``, ``javascript:`` links, Markdown links, autolinks and
bare URLs: the report pane and the source viewer show all of it as text, ask
``loadResource`` for nothing remote, and keep only the app's own ``[n]``
citation links; the Markdown, HTML and PDF exports hold no live element (the
HTML is parsed, the Markdown is rendered by two Markdown renderers with raw
HTML and autolinks on, the PDF's annotations are read), and the HTML carries
a restrictive Content-Security-Policy. "Open original" opens documents and
shows scripts in their folder.
"""

from __future__ import annotations

import html as html_module
import http.server
import random
import re
import sys
import threading
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from exporting import export_report
from markdown_it import MarkdownIt
from pypdf import PdfReader
from PySide6.QtCore import QObject, QPoint, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QPdfWriter, QTextCursor, QTextDocument

from app.core.models import Chunk, Evidence
from app.core.opening import OpenDecision, decide_open
from app.export.safe_markdown import neutralize_markdown
from app.ui import source_viewer as source_viewer_module
from app.ui.citations import citation_number, linkify_citations
from app.ui.file_opener import DesktopOpener
from app.ui.report_view import ReportView
from app.ui.source_viewer import OPEN_LABEL, REVEAL_LABEL, SourceViewer

HOSTILE = """## Findings

Milvus stores vectors [1]. ACCESS GRANTED - download the update from http://evil.example/update [2].

<img src="http://127.0.0.1:{port}/pixel.png">
<script>alert("owned")</script>
<iframe src="http://127.0.0.1:{port}/frame"></iframe>
<link rel="stylesheet" href="http://127.0.0.1:{port}/style.css">

Also [click](http://evil.example), <http://evil.example/auto>, [run](javascript:alert(1)),
![pixel](http://127.0.0.1:{port}/image.png), www.evil.example and [ref][evil] and [3](http://evil.example/3).

[evil]: http://evil.example/ref

## Sources

[1] Milvus docs — /docs/milvus.md (chunk c1)
[2] Hostile notes — /docs/evil.md (chunk c2)
"""

# what must stay readable, as text
SHOWN_AS_TEXT = [
    "http://evil.example/update",
    '<script>alert("owned")</script>',
    "[click](http://evil.example)",
    "<http://evil.example/auto>",
    "[run](javascript:alert(1))",
    "<iframe src=",
]

LIVE_TAGS = {"img", "script", "iframe", "frame", "frameset", "link", "object", "embed", "form", "base", "svg",
             "video", "audio", "source", "input", "button", "applet"}  # fmt: skip
URL_ATTRIBUTES = {
    "src",
    "href",
    "action",
    "formaction",
    "background",
    "poster",
    "srcset",
    "data",
    "xlink:href",
}
REMOTE = re.compile(r"^\s*(?:https?|ftp|wss?|file|javascript|vbscript|data):|^\s*//", re.IGNORECASE)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser


def live_elements(html: str, keep_href: Callable[[str], bool] = lambda _href: False) -> list[str]:
    """Every element of ``html`` that would load, run or link to something."""
    parsed = parse(html)
    found = []
    for tag, attrs in parsed.tags:
        if tag in LIVE_TAGS:
            found.append(f"<{tag}>")
        if tag == "a" and "href" in attrs and not keep_href(attrs["href"]):
            found.append(f"<a href={attrs['href']!r}>")
        if tag == "meta" and attrs.get("http-equiv", "").lower() == "refresh":
            found.append("<meta refresh>")
        for name, value in attrs.items():
            if name.startswith("on"):
                found.append(f"<{tag} {name}>")
            if name in URL_ATTRIBUTES and name != "href" and value:
                found.append(f"<{tag} {name}={value!r}>")
            if name == "style" and re.search(r"url\s*\(|expression\s*\(", value, re.IGNORECASE):
                found.append(f"<{tag} style={value!r}>")
    for css in parsed.styles:
        if re.search(r"url\s*\(|@import", css, re.IGNORECASE):
            found.append(f"<style> {css!r}")
    return found


def document_anchors(doc: QTextDocument) -> list[str]:
    hrefs = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if (
                fragment.isValid()
                and fragment.charFormat().isAnchor()
                and fragment.charFormat().anchorHref()
            ):
                hrefs.append(fragment.charFormat().anchorHref())
            it += 1
        block = block.next()
    return hrefs


def _is_citation(href: str) -> bool:
    return citation_number(href) is not None


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def tracker() -> Iterator[int]:
    """A loopback server standing for a remote one: any request to it is a leak."""
    _Counter.hits = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()
    assert _Counter.hits == [], f"something was fetched: {_Counter.hits}"


class RecordingReportView(ReportView):
    """The real report view, noting every resource Qt asks it for."""

    def __init__(self) -> None:
        super().__init__()
        self.requested: list[str] = []

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        self.requested.append(name.toString() if isinstance(name, QUrl) else str(name))
        return super().loadResource(type, name)


def test_the_recorder_sees_what_an_unsafe_render_would_load(qtbot: Any) -> None:
    """Control: rendering the same Markdown the plain Qt way asks for the remote image,
    so the empty record in the next test means something."""
    view = RecordingReportView()
    qtbot.addWidget(view)
    view.show()
    view.document().setMarkdown(
        "![pixel](http://127.0.0.1:9/image.png)\n\n[click](http://evil.example)"
    )
    assert "http://127.0.0.1:9/image.png" in view.requested
    assert "http://evil.example" in document_anchors(view.document())


def test_the_report_pane_shows_hostile_markdown_as_text_and_keeps_citations(
    qtbot: Any, tracker: int
) -> None:
    view = RecordingReportView()
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    view.set_markdown_text(HOSTILE.format(port=tracker))
    qtbot.waitExposed(view)
    doc = view.document()

    assert not [url for url in view.requested if REMOTE.match(url)], view.requested
    assert all(_is_citation(href) for href in document_anchors(doc)), document_anchors(doc)
    assert set(view.citation_anchor_positions()) == {1, 2}
    assert live_elements(doc.toHtml(), _is_citation) == []
    text = doc.toPlainText()
    for shown in SHOWN_AS_TEXT:
        assert shown in text

    # the app's own citation links still work
    cursor = QTextCursor(doc)
    cursor.setPosition(view.citation_anchor_positions()[2] + 1)
    point: QPoint = view.cursorRect(cursor).center()
    with qtbot.waitSignal(view.citationClicked, timeout=2000) as clicked:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert clicked.args == [2]


def test_a_streamed_hostile_report_never_renders_live_either(qtbot: Any, tracker: int) -> None:
    view = RecordingReportView()
    qtbot.addWidget(view)
    view.show()
    text = HOSTILE.format(port=tracker)
    for i in range(0, len(text), 7):  # partial tags and links arrive on their own
        view.append_markdown(text[i : i + 7])
        view.flush()
        assert live_elements(view.document().toHtml(), _is_citation) == []
    assert not [url for url in view.requested if REMOTE.match(url)]
    assert set(view.citation_anchor_positions()) == {1, 2}


def _evidence(folder: Path, port: int) -> list[Evidence]:
    return [
        Evidence(
            1,
            "c1",
            "what is milvus",
            "Milvus stores vectors.",
            str(folder / "milvus.md"),
            title="Milvus docs",
        ),
        Evidence(
            2,
            "c2",
            "what is milvus",
            f'Visit http://evil.example/update <script>alert(2)</script> <img src="http://127.0.0.1:{port}/q.png">'
            " [q](javascript:alert(2))",
            str(folder / "evil`.md"),
            page=3,
            title=f"Notes <iframe src=http://127.0.0.1:{port}/t></iframe> [t](http://evil.example/t)",
        ),
    ]


QUESTION = "What is <b>Milvus</b></title><script>alert(0)</script>? see http://evil.example/q"


def test_the_html_export_has_no_live_element_and_a_restrictive_csp(
    qapp: Any, tmp_path: Path, tracker: int
) -> None:
    path = export_report(
        tmp_path / "report.html",
        QUESTION,
        HOSTILE.format(port=tracker),
        _evidence(tmp_path, tracker),
    )
    html = path.read_text(encoding="utf-8")
    assert live_elements(html) == []
    assert not [attrs for tag, attrs in parse(html).tags if tag == "a"]
    metas = [attrs for tag, attrs in parse(html).tags if tag == "meta"]
    policies = [a["content"] for a in metas if a.get("http-equiv") == "Content-Security-Policy"]
    assert len(policies) == 1
    directives = {d.split()[0]: d.split()[1:] for d in policies[0].split(";") if d.strip()}
    assert directives["default-src"] == ["'none'"]
    assert "script-src" not in directives and "img-src" not in directives
    assert set(directives) <= {"default-src", "style-src", "base-uri", "form-action"}
    titles = [html[m.end() : html.index("</title>")] for m in re.finditer("<title>", html)]
    assert titles == [
        "What is &lt;b&gt;Milvus&lt;/b&gt;&lt;/title&gt;&lt;script&gt;alert(0)&lt;/script&gt;? see http://evil.example/q"
    ]
    text = re.sub(r"<[^>]+>", "", html)
    assert "http://evil.example/update" in text and "alert(2)" in text


def _rendered_by_markdown_viewers(markdown: str) -> list[str]:
    """The HTML two Markdown renderers make of ``markdown``, raw HTML and autolinks allowed
    (what GitHub, an editor's preview or a static site would show)."""
    doc = QTextDocument()
    doc.setMarkdown(markdown, QTextDocument.MarkdownFeature.MarkdownDialectGitHub)
    return [doc.toHtml(), MarkdownIt("commonmark", {"html": True}).render(markdown)]


def test_the_markdown_viewers_check_sees_live_markdown(qapp: Any) -> None:
    """Control: the raw hostile report is live in both renderers."""
    for html in _rendered_by_markdown_viewers(HOSTILE.format(port=9)):
        assert live_elements(html) != []


def test_the_markdown_export_is_inert_in_any_markdown_viewer(
    qapp: Any, tmp_path: Path, tracker: int
) -> None:
    path = export_report(
        tmp_path / "report.md", QUESTION, HOSTILE.format(port=tracker), _evidence(tmp_path, tracker)
    )
    markdown = path.read_text(encoding="utf-8")
    for html in _rendered_by_markdown_viewers(markdown):
        assert live_elements(html) == []
        assert not [attrs for tag, attrs in parse(html).tags if tag == "a"]
    plain = QTextDocument()
    plain.setMarkdown(markdown)
    for shown in [*SHOWN_AS_TEXT, "evil`.md, page 3", "<script>alert(2)</script>"]:
        assert shown in plain.toPlainText()


def _pdf_links(path: Path) -> list[str]:
    links = []
    for page in PdfReader(str(path)).pages:
        for annotation in page.get("/Annots") or []:
            obj = annotation.get_object()
            action = obj.get("/A")
            links.append(
                str(action.get_object().get("/URI")) if action else str(obj.get("/Subtype"))
            )
    return links


def test_the_pdf_check_sees_a_link_when_there_is_one(qtbot: Any, tmp_path: Path) -> None:
    """Control: Qt writes a live link into a PDF as an annotation, and the check finds it."""
    doc = QTextDocument()
    doc.setMarkdown("[click](http://evil.example/update)")
    writer = QPdfWriter(str(tmp_path / "live.pdf"))
    doc.print_(writer)
    del writer
    assert "http://evil.example/update" in _pdf_links(tmp_path / "live.pdf")


# links alone, with no raw HTML around them that a careless renderer would swallow them with
LINKS_ONLY = "See [click](http://evil.example/update), <http://evil.example/auto> and www.evil.example [1].\n"


@pytest.mark.parametrize("report", ["hostile", "links-only"])
def test_the_pdf_export_has_no_link(qtbot: Any, tmp_path: Path, tracker: int, report: str) -> None:
    markdown = HOSTILE.format(port=tracker) if report == "hostile" else LINKS_ONLY
    question = QUESTION if report == "hostile" else "What is Milvus?"
    # every source listed, the hostile one too, even where the report does not cite it
    evidence = _evidence(tmp_path, tracker)
    path = export_report(
        tmp_path / "report.pdf", question, markdown, evidence, include_consulted=True
    )
    assert _pdf_links(path) == []
    text = " ".join(page.extract_text() for page in PdfReader(str(path)).pages)
    assert "evil.example/update" in text and "alert" in text


PIECES = ["`", "``", "```", "~~~", "```js", "    ", "  ", "\t", "> ", "- ", "1. ", "1) ", "\n", "\n\n", "\r\n", "<",
          ">", "[", "]", "(", ")", "](", "![", "!", "\\", "|", "|---|", ":", "_", "*", "***", "# ", "&lt;", "&#60;",
          "<!--", "[^1]", "a", "b c", "[1]", "- [ ] ", "http://e.example/x", "HTTP://E.EXAMPLE", "www.e.example",
          "e.com/x", "a@b.example", "mailto:a@b.example", "javascript:alert(1)", "<script>", "<a href=x>",
          "<img src=http://e.example/i>", "<http://e.example>", "<https://e.example/a_b>", "[a](http://e.example)",
          "[x]: http://e.example", "[a]: <http://e.example>", "[a]\n[a]: http://e.example\n"]  # fmt: skip


@pytest.mark.qt_log_ignore("attempted to insert into a list that no longer exists")
def test_random_markdown_is_inert_in_any_markdown_viewer_after_neutralising(qapp: Any) -> None:
    """2,000 random mixes of every construct that can make a link, an image or HTML
    (code spans and fences around them, tables, lists, quotes, escapes)."""
    rng = random.Random(20240613)
    for _ in range(2000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
        safe = neutralize_markdown(text)
        for html in _rendered_by_markdown_viewers(safe):
            assert live_elements(html) == [], (text, safe)


def test_the_sanitiser_keeps_code_literal_and_citations_plain() -> None:
    markdown = (
        "Call `f(<x>)` [1].\n\n```html\n<b>kept</b> http://code.example\n```\n\n<b>escaped</b>\n"
    )
    safe = neutralize_markdown(markdown)
    assert "`f(<x>)` [1]." in safe
    assert "<b>kept</b> http://code.example" in safe
    assert "\\<b>escaped" in safe
    # a stray backtick (escaped by the sanitiser) does not hide a later citation
    assert "(cite:1)" in linkify_citations(neutralize_markdown("a ` b [1]"))
    assert "(cite:9)" not in linkify_citations(neutralize_markdown("a `x [9]` b"))


# -- the source viewer ---------------------------------------------------------


class RecordingOpener:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Path]] = []

    def open_file(self, path: Path) -> bool:
        self.calls.append(("open", path))
        return True

    def reveal_file(self, path: Path) -> bool:
        self.calls.append(("reveal", path))
        return True


def _source(path: Path, port: int) -> tuple[Evidence, Chunk, list[Chunk], OpenDecision]:
    """A hostile chunk of ``path`` among its context, and what "Open original" would do."""
    hostile = (
        f'Read this <img src="http://127.0.0.1:{port}/s.png"> <script>alert(3)</script> '
        f'<iframe src="http://127.0.0.1:{port}/f"></iframe> <link rel=stylesheet href="http://127.0.0.1:{port}/c.css"> '
        '<a href="javascript:alert(3)">run</a> and http://evil.example/update'
    )
    chunk = Chunk(
        "c2",
        "d1",
        "docs",
        str(path),
        hostile,
        title="<b>Evil</b>",
        headings=("<i>Head</i>",),
        page=2,
    )
    before = Chunk(
        "c1", "d1", "docs", str(path), "Before <img src=http://127.0.0.1:9/b.png>", chunk_no=0
    )
    evidence = Evidence(
        2, "c2", "q", hostile, str(path), page=2, collection="<u>docs</u>", title="<b>Evil</b>"
    )
    return evidence, chunk, [before, chunk], decide_open(path)


def test_the_source_viewer_shows_chunk_text_as_text_and_loads_nothing(
    qtbot: Any, tmp_path: Path, tracker: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    requested: list[str] = []
    original = source_viewer_module._LocalOnlyBrowser.loadResource

    def recording(self: Any, type: int, name: QUrl | str) -> Any:
        requested.append(name.toString() if isinstance(name, QUrl) else str(name))
        return original(self, type, name)

    monkeypatch.setattr(source_viewer_module._LocalOnlyBrowser, "loadResource", recording)
    path = tmp_path / "evil.md"
    path.write_text("# Evil\n", encoding="utf-8")
    viewer = SourceViewer(opener=RecordingOpener())
    qtbot.addWidget(viewer)
    viewer.show_source(*_source(path, tracker))
    viewer.show()
    qtbot.waitExposed(viewer)
    assert requested == []
    html = viewer.text.document().toHtml()
    assert live_elements(html) == []
    assert document_anchors(viewer.text.document()) == []
    text = viewer.text.toPlainText()
    assert "<script>alert(3)</script>" in text and '<a href="javascript:alert(3)">run</a>' in text
    assert viewer.location.textFormat() == Qt.TextFormat.PlainText
    assert "<i>Head</i>" in viewer.location.text() and "<u>docs</u>" in viewer.location.text()
    assert viewer.header.textFormat() == Qt.TextFormat.PlainText
    assert viewer.header.text() == "[2] <b>Evil</b>"  # as written, shown as text


@pytest.mark.parametrize(
    ("name", "mode", "label", "action"),
    [
        ("report.pdf", 0o644, OPEN_LABEL, "open"),
        ("notes.md", 0o644, OPEN_LABEL, "open"),
        ("update.sh", 0o644, REVEAL_LABEL, "reveal"),
        ("setup.EXE", 0o644, REVEAL_LABEL, "reveal"),
        ("report.pdf", 0o755, REVEAL_LABEL, "reveal"),
    ],
)
def test_open_original_opens_documents_and_shows_scripts_in_their_folder(
    qtbot: Any, aloop: Any, tmp_path: Path, name: str, mode: int, label: str, action: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"%PDF-1.7 harmless\n")
    path.chmod(mode)
    opener = RecordingOpener()
    viewer = SourceViewer(opener=opener)
    qtbot.addWidget(viewer)
    viewer.show_source(*_source(path, 9))
    assert viewer.open_button.isEnabled()
    assert viewer.open_button.text() == label
    assert viewer.decision is not None and viewer.decision.action == action
    assert html_module.escape(viewer.decision.reason) in viewer.open_button.toolTip()
    says = "shows it in the file manager" if action == "reveal" else "default application"
    assert says in viewer.open_button.toolTip()
    with qtbot.waitSignal(viewer.originalHandled, timeout=2000) as handled:
        qtbot.mouseClick(viewer.open_button, Qt.MouseButton.LeftButton)
    assert handled.args == [action, str(path), True]
    assert opener.calls == [(action, path)]


def test_a_file_that_became_a_script_after_the_viewer_showed_it_is_revealed(
    qtbot: Any, aloop: Any, tmp_path: Path
) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(b"%PDF-1.7\n")
    path.chmod(0o644)
    opener = RecordingOpener()
    viewer = SourceViewer(opener=opener)
    qtbot.addWidget(viewer)
    viewer.show_source(*_source(path, 9))
    assert viewer.open_button.text() == OPEN_LABEL
    path.chmod(0o755)
    with qtbot.waitSignal(viewer.originalHandled, timeout=2000):  # decided again, off the loop
        viewer.open_button.click()
    assert opener.calls == [("reveal", path)]
    assert viewer.open_button.text() == REVEAL_LABEL


def test_a_missing_original_cannot_be_opened(qtbot: Any, aloop: Any, tmp_path: Path) -> None:
    opener = RecordingOpener()
    viewer = SourceViewer(opener=opener)
    qtbot.addWidget(viewer)
    viewer.show_source(*_source(tmp_path / "gone.pdf", 9))
    assert not viewer.open_button.isEnabled()
    assert "gone.pdf" in viewer.open_button.toolTip()
    assert viewer.open_button.text() == OPEN_LABEL
    task = viewer.open_original()
    assert task is not None
    qtbot.waitUntil(task.done, timeout=2000)
    assert task.exception() is None and opener.calls == []


class _UrlRecorder(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def handle(self, url: QUrl) -> None:
        self.urls.append(url.toLocalFile())


@pytest.fixture
def desktop_urls() -> Iterator[_UrlRecorder]:
    """What the real desktop opener hands to the system, caught before the system sees it."""
    recorder = _UrlRecorder()
    QDesktopServices.setUrlHandler("file", recorder, "handle")
    yield recorder
    QDesktopServices.unsetUrlHandler("file")


@pytest.mark.skipif(
    sys.platform in ("darwin", "win32"),
    reason="there Finder/Explorer is started (open -R, /select)",
)
def test_the_desktop_opener_hands_the_system_the_folder_of_a_script_never_the_script(
    qtbot: Any, aloop: Any, tmp_path: Path, desktop_urls: _UrlRecorder
) -> None:
    script = tmp_path / "docs" / "update.sh"
    script.parent.mkdir()
    script.write_text("echo owned\n", encoding="utf-8")
    document = tmp_path / "docs" / "report.pdf"
    document.write_bytes(b"%PDF-1.7\n")
    viewer = SourceViewer(opener=DesktopOpener(file_manager_bus=False))
    qtbot.addWidget(viewer)
    for path in (script, document):
        viewer.show_source(*_source(path, 9))
        with qtbot.waitSignal(viewer.originalHandled, timeout=2000):
            viewer.open_button.click()
    assert desktop_urls.urls == [str(script.parent), str(document)]
