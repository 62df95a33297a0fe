"""The source viewer shows a chunk's text as it was written: ``>`` reads as ``>``
(not ``&gt;``, whether the text holds the character or a converter's escape of
it), markup reads as markup, and the cited chunk is the highlighted one."""

from __future__ import annotations

from typing import Any

from app.core.models import Chunk, Evidence
from app.ui.source_viewer import SourceViewer, as_written

WRITTEN = "Quoted:\n> a reply\nif a > b && c < d: <b>bold</b> stays as typed"


def test_the_viewer_shows_the_cited_chunk_as_written(qtbot: Any) -> None:
    escaped = "Quoted:\n&gt; a reply\nif a &gt; b &amp;&amp; c &lt; d: &lt;b&gt;bold&lt;/b&gt; stays as typed"
    before = Chunk("c1", "d", "docs", "/docs/a.md", "Before > it.", chunk_no=0)
    cited = Chunk(
        "c2",
        "d",
        "docs",
        "/docs/a.md",
        escaped,
        title="A &gt; B",
        headings=("Part > One",),
        chunk_no=1,
    )
    after = Chunk("c3", "d", "docs", "/docs/a.md", "After it.", chunk_no=2)
    evidence = Evidence(4, "c2", "q", escaped, "/docs/a.md", title="A &gt; B")
    viewer = SourceViewer()
    qtbot.addWidget(viewer)
    viewer.show_source(evidence, cited, [before, cited, after], None)
    text = viewer.text.toPlainText()
    assert WRITTEN in text and "Before > it." in text and "After it." in text
    assert "&gt;" not in text and "&amp;" not in text and "&lt;" not in text
    assert viewer.cited_block_text() == WRITTEN  # only the cited chunk is highlighted
    assert viewer.header.text() == "[4] A > B"
    assert "Part > One" in viewer.location.text() and "&gt;" not in viewer.location.text()


def test_a_source_without_its_chunk_shows_its_quote_as_written(qtbot: Any) -> None:
    evidence = Evidence(1, "gone", "q", "x &gt; y and a > b", "/docs/b.md")
    viewer = SourceViewer()
    qtbot.addWidget(viewer)
    viewer.show_source(evidence, None, [], None)
    assert viewer.text.toPlainText() == "x > y and a > b"
    assert viewer.cited_block_text() == "x > y and a > b"


def test_as_written_decodes_only_the_escapes_a_converter_leaves() -> None:
    assert (
        as_written("a &gt; b &lt;c&gt; &amp;amp; &quot;q&quot; &#39;") == 'a > b <c> &amp; "q" \''
    )
    assert as_written("&copy; &nbsp; AT&T &gt") == "&copy; &nbsp; AT&T &gt"


def test_the_viewer_opens_with_the_cited_passage_at_the_top_of_its_view(qtbot: Any) -> None:
    before = [
        Chunk(
            f"b{i}",
            "d",
            "docs",
            "/docs/a.md",
            f"Paragraph {i} before the cited one. " * 6,
            chunk_no=i,
        )
        for i in range(40)
    ]
    cited = Chunk(
        "c",
        "d",
        "docs",
        "/docs/a.md",
        "THE CITED PASSAGE says what the report claims.",
        chunk_no=40,
    )
    after = [
        Chunk(f"a{i}", "d", "docs", "/docs/a.md", f"Paragraph {i} after it. " * 6, chunk_no=41 + i)
        for i in range(10)
    ]
    evidence = Evidence(2, "c", "q", cited.text, "/docs/a.md")
    viewer = SourceViewer()
    qtbot.addWidget(viewer)
    viewer.resize(640, 420)
    viewer.show_source(
        evidence, cited, [*before, cited, *after], None
    )  # filled before it is shown, as the window does
    viewer.show()
    qtbot.waitExposed(viewer)

    def cited_in_view() -> bool:
        document = viewer.text.document()
        block = document.findBlock(viewer.text.toPlainText().index("THE CITED PASSAGE"))
        top = (
            document.documentLayout().blockBoundingRect(block).top()
            - viewer.text.verticalScrollBar().value()
        )
        return (
            0 <= top <= viewer.text.viewport().height() / 3
        )  # near the top, not at the bottom edge

    qtbot.waitUntil(cited_in_view, timeout=5_000)
    assert viewer.text.verticalScrollBar().value() > 0
