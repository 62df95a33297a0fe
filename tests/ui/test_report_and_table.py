"""The report pane renders Markdown (headings, lists, tables, code), turns
citations into links, flags unsupported ones, never loads anything; the
table view sorts, highlights low-confidence cells and shows quotes."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QTextCursor, QTextDocument, QTextTable

from app.core.models import EntityTable, TableCell
from app.export.md_fences import balance_fences
from app.ui.citations import citation_number, cited_numbers, linkify_citations
from app.ui.report_view import ReportView
from app.ui.safe_document import fragments
from app.ui.table_view import EntityTableView

REPORT = """# Milvus

Milvus is a vector database [1]. It runs embedded as Milvus Lite [2, 3].

- fast
- open source [1]

| name | kind |
|---|---|
| Lite | embedded |

```python
x = [4]  # not a citation
```

![tracker](http://127.0.0.1:{port}/pixel.png)
![local](file:///etc/hostname)
"""


class _Counter(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def table_cells(doc: QTextDocument) -> list[list[list[str]]]:
    """Every table of the rendered document, as rows of cell texts."""
    tables = [frame for frame in doc.rootFrame().childFrames() if isinstance(frame, QTextTable)]
    return [
        [
            [t.cellAt(r, c).firstCursorPosition().block().text() for c in range(t.columns())]
            for r in range(t.rows())
        ]
        for t in tables
    ]


@pytest.fixture
def http_server() -> Iterator[http.server.HTTPServer]:
    _Counter.hits = 0
    server = http.server.HTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_markdown_renders_and_citations_are_links(qtbot: Any, http_server: Any) -> None:
    view = ReportView()
    qtbot.addWidget(view)
    view.resize(600, 500)
    view.show()
    view.set_markdown_text(REPORT.format(port=http_server.server_address[1]))
    doc: QTextDocument = view.document()
    assert doc.toPlainText().startswith("Milvus")
    first = doc.begin()
    assert first.blockFormat().headingLevel() == 1
    blocks = [doc.findBlockByNumber(i) for i in range(doc.blockCount())]
    assert [b.text() for b in blocks if b.textList() is not None] == ["fast", "open source [1]"]
    assert table_cells(doc) == [
        [["name", "kind"], ["Lite", "embedded"]]
    ]  # a real table, not its pipes
    assert "x = [4]" in doc.toPlainText()  # code untouched
    assert set(view.citation_anchor_positions()) == {1, 2, 3}

    # clicking [2] emits its number
    position = view.citation_anchor_positions()[2]
    cursor = QTextCursor(doc)
    cursor.setPosition(position + 1)
    point: QPoint = view.cursorRect(cursor).center()
    with qtbot.waitSignal(view.citationClicked, timeout=2000) as clicked:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert clicked.args == [2]

    # nothing was fetched, local or remote
    assert _Counter.hits == 0
    assert (
        view.loadResource(2, QUrl(f"http://127.0.0.1:{http_server.server_address[1]}/x.png"))
        is None
    )
    assert view.loadResource(2, QUrl("file:///etc/hostname")) is None
    assert not view.openExternalLinks() and not view.openLinks()


def struck_citations(view: ReportView) -> list[tuple[int, bool]]:
    """Every citation link of the document, in order, with whether it is struck out."""
    return [
        (number, fmt.fontStrikeOut())
        for _, _, fmt in fragments(view.document())
        if fmt.isAnchor() and (number := citation_number(fmt.anchorHref())) is not None
    ]


def test_an_unsupported_citation_is_struck_in_its_sentence_and_an_unknown_one_everywhere(
    qtbot: Any,
) -> None:
    view = ReportView()
    qtbot.addWidget(view)
    view.set_markdown_text(
        "A claim [1]. Another claim [2]. A third [7].\n\n"
        "- A listed claim that holds [2, 1].\n\n"
        "> “The source's own words.” [2]\n\n"
        "## Sources\n\n- [1] First — a.md\n- [2] Second — b.md\n"
    )
    view.set_known_citations({1, 2})
    view.mark_citation(
        2, False, "the source says otherwise", "Another claim."
    )  # as the checker says it
    view.mark_citation(2, True, "", "A listed claim that holds.")
    view.flush()
    assert view.unsupported_citations() == {
        2: "the source says otherwise",
        7: "No source with this number.",
    }
    # flagged as the final report is, with the checker's reason
    assert (
        "Another claim [2]. ⚠ (not supported by [2] — the source says otherwise)"
        in view.toPlainText()
    )
    assert struck_citations(view) == [
        (1, False),
        (2, True),  # the unsupported sentence…
        (2, True),  # …and its flag
        (7, True),  # no source 7: struck wherever it stands
        (2, False),  # the same source backing another sentence
        (1, False),
        (2, False),  # a quote
        (1, False),  # the sources list
        (2, False),
    ]
    cursor = QTextCursor(view.document())
    cursor.setPosition(view.citation_anchor_positions()[7] + 1)
    assert "Unsupported citation [7]: No source with this number." in cursor.charFormat().toolTip()
    view.mark_citation(2, True, "", "Another claim.")  # checked again: supported
    view.flush()
    assert view.unsupported_citations() == {7: "No source with this number."}
    assert "⚠" not in view.toPlainText()
    assert [struck for number, struck in struck_citations(view) if number == 2] == [False] * 4


def test_streamed_text_is_rendered_in_batches(qtbot: Any) -> None:
    view = ReportView()
    qtbot.addWidget(view)
    text = "## Findings\n\n" + " ".join(f"Sentence {i} [1]." for i in range(300))
    for i in range(0, len(text), 5):
        view.append_markdown(text[i : i + 5])
    assert view.render_count == 0  # nothing rendered per delta
    qtbot.waitUntil(
        lambda: view.render_count >= 1 and "Sentence 299" in view.toPlainText(), timeout=3000
    )
    assert view.render_count <= 3


def test_citation_helpers() -> None:
    assert cited_numbers("a [2] b [1, 2] c `[9]`") == [2, 1, 9]
    assert "cite:9" not in linkify_citations("see `x[9]`")
    assert linkify_citations("[see](http://x) and [3]") == "[see](http://x) and [\\[3\\]](cite:3)"
    assert (
        balance_fences("```\ncode\n## Sources\n\n[1] a\n")
        == "```\ncode\n```\n\n## Sources\n\n[1] a\n"
    )


def test_table_sorts_highlights_and_quotes(qtbot: Any) -> None:
    table = EntityTable(
        entity_type="database",
        columns=("licence", "stars"),
        rows=(
            (
                "Milvus",
                (
                    TableCell("Apache-2.0", 0.9, "c1", "licensed under Apache 2.0"),
                    TableCell("30000", 0.8, "c2", "30k stars"),
                ),
            ),
            (
                "Faiss",
                (TableCell("MIT", 0.2, "c3", "maybe MIT"), TableCell("9000", 0.9, "c4", "9k")),
            ),
            (
                "Qdrant",
                (
                    TableCell("Apache-2.0", 0.95, "c5", "Apache"),
                    TableCell("100000", 0.7, "c6", "100k"),
                ),
            ),
        ),
    )
    view = EntityTableView()
    qtbot.addWidget(view)
    view.set_table(table)
    model = view.model()
    assert model.headerData(0, Qt.Orientation.Horizontal) == "database"
    view.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # numeric sort on "stars"
    assert [model.index(r, 0).data() for r in range(3)] == ["Faiss", "Milvus", "Qdrant"]
    view.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    assert [model.index(r, 0).data() for r in range(3)] == ["Qdrant", "Milvus", "Faiss"]
    faiss_licence = model.index(2, 1)
    assert faiss_licence.data(Qt.ItemDataRole.BackgroundRole) is not None  # low confidence
    assert model.index(1, 1).data(Qt.ItemDataRole.BackgroundRole) is None
    assert "maybe MIT" in faiss_licence.data(Qt.ItemDataRole.ToolTipRole)
    assert "20%" in faiss_licence.data(Qt.ItemDataRole.ToolTipRole)


def test_a_table_run_exports_csv_and_json(qtbot: Any, aloop: Any, tmp_path: Any) -> None:
    from helpers import await_in_test

    from app.core.paths import app_paths
    from app.core.settings import Settings
    from app.ui.main_window import MainWindow
    from app.ui.services import Services

    window = MainWindow(Services(Settings(), app_paths().ensure()))
    qtbot.addWidget(window)
    table = EntityTable(
        entity_type="database",
        columns=("licence",),
        rows=(("Milvus", (TableCell("Apache-2.0", 0.9, "c1", "Apache 2.0"),)),),
    )
    window.presenter._show_table(table)
    assert window.report_tabs.currentWidget() is window.table
    csv_path = await_in_test(
        qtbot, window.export_to(tmp_path / "table.csv")
    )  # written off the GUI thread
    assert csv_path is not None
    assert csv_path.read_text(encoding="utf-8").splitlines()[:2] == [
        "database,licence,licence confidence,licence source",
        "Milvus,Apache-2.0,0.90,c1",
    ]
    json_path = await_in_test(qtbot, window.export_to(tmp_path / "table.json"))
    assert json_path is not None and '"Milvus"' in json_path.read_text(encoding="utf-8")
