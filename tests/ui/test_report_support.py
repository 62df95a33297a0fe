"""What a person reads and shares: the report's header says how many of its
sentences are cited and flagged, a sentence with no citation is marked, Sources
names only what the report cites (as a list), and the evidence read but not
cited waits, collapsed, under "Also consulted" — the same in the live window,
in a run reopened from History, and in every export.

The widget tests drive a real ReportView; the run test is the real engine with
the real starter model (llama.cpp), its events fed to the window's presenter as
they come, saved by the real history store and replayed from it.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from exporting import export_report
from helpers import await_in_test
from pypdf import PdfReader
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor

from app.core.events import Finished, ResearchEvent
from app.core.models import Budget, Citation, Evidence, SentenceSupport
from app.core.paths import AppPaths
from app.export.content import ReportContent
from app.export.markdown import report_markdown
from app.research.citations import (
    cited_numbers,
    first_cited,
    sentence_support,
    split_report,
    support_headline,
)
from app.research.engine import ResearchEngine
from app.research.provenance import STARTER_HEADER
from app.store.research_runs import RunStore
from app.ui.report_view import CONSULTED_HREF, UNCITED_MARK, UNCITED_TIP, ReportView
from app.ui.run_presenter import RunPresenter
from app.ui.table_view import EntityTableView
from app.ui.tree_model import ResearchTreeModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))
from scripted import MILVUS_CHUNKS, MemoryLibrary

REPORT = """Milvus is a vector database [1]. It is the fastest database ever [2]. ⚠ *(not supported by [2])*

Some readers like it. Milvus runs embedded as Milvus Lite [1].

## Sources

- [1] Milvus docs — /docs/milvus.md
- [2] Speed notes — /docs/speed.md

## Open questions

- 1 cited claim(s) were not supported by their source (marked ⚠).
"""
CITATIONS = (
    Citation(1, "Milvus is a vector database.", True),
    Citation(2, "It is the fastest database ever.", False),
)


def _evidence(number: int, title: str) -> Evidence:
    return Evidence(
        number, f"c{number}", "q", f"Quote of {title}.", f"/docs/{title.lower()}.md", title=title
    )


EVIDENCE = [
    _evidence(1, "Milvus"),
    _evidence(2, "Speed"),
    _evidence(3, "Bananas"),
    _evidence(4, "Weaviate"),
]


def _anchor_point(view: ReportView, href: str) -> QPoint:
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid() and fragment.charFormat().anchorHref() == href:
                cursor = QTextCursor(view.document())
                cursor.setPosition(fragment.position() + 1)
                view.setTextCursor(cursor)
                view.ensureCursorVisible()
                return view.cursorRect(cursor).center()
            it += 1
        block = block.next()
    raise AssertionError(f"no link to {href} in: {view.toPlainText()}")


def _first_block(view: ReportView) -> str:
    return view.document().begin().text()


def test_a_finished_report_has_its_header_and_marks_every_uncited_sentence(qtbot: Any) -> None:
    view = ReportView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    support = sentence_support(REPORT, CITATIONS, "word and meaning overlap")
    assert support == SentenceSupport(
        sentences=4, cited=3, flagged=1, checked_by="word and meaning overlap"
    )
    view.show_finished(
        REPORT, known={1, 2, 3, 4}, citations=CITATIONS, support=support, consulted=EVIDENCE[2:]
    )
    header = "2 of 4 sentences supported, 1 flagged, 1 cites no source (checked by word and meaning overlap)"
    assert view.header_text() == header == _first_block(view)
    shown = view.toPlainText()
    # the one uncited sentence is marked, and nothing else
    assert view.uncited_marks() == 1 and f"Some readers like it. {UNCITED_MARK}" in shown
    cursor = view.document().find(UNCITED_MARK)
    assert not cursor.isNull() and cursor.charFormat().toolTip() == UNCITED_TIP
    # the flagged one keeps its ⚠ and its struck-out citation
    assert "⚠" in shown and set(view.unsupported_citations()) == {2}
    # while a report is being written, nothing is marked yet
    view.clear_report()
    view.append_markdown("Some readers like it. Milvus is a vector database [1].")
    view.flush()
    assert (
        view.header_text() == ""
        and view.uncited_marks() == 0
        and "Also consulted" not in view.toPlainText()
    )


def test_also_consulted_is_collapsed_until_clicked_and_its_sources_open(qtbot: Any) -> None:
    view = ReportView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    support = sentence_support(REPORT, CITATIONS)
    view.show_finished(
        REPORT, known={1, 2, 3, 4}, citations=CITATIONS, support=support, consulted=EVIDENCE[2:]
    )
    shown = view.toPlainText()
    assert "▸ Also consulted (2)" in shown and "Bananas" not in shown and "Weaviate" not in shown
    # the Sources list is a list: one block per source
    assert [b for b in shown.splitlines() if b.startswith(("[1]", "[2]"))] == [
        "[1] Milvus docs — /docs/milvus.md",
        "[2] Speed notes — /docs/speed.md",
    ]
    qtbot.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, CONSULTED_HREF)
    )
    assert view.consulted_open
    shown = view.toPlainText()
    assert "▾ Also consulted (2)" in shown and "[3] Bananas — /docs/bananas.md" in shown
    assert "[4] Weaviate — /docs/weaviate.md" in shown
    with qtbot.waitSignal(view.citationClicked, timeout=5_000) as clicked:
        qtbot.mouseClick(
            view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, "cite:4")
        )
    assert clicked.args == [4]
    qtbot.mouseClick(
        view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, CONSULTED_HREF)
    )
    assert not view.consulted_open and "Weaviate" not in view.toPlainText()


def test_the_export_lists_the_cited_sources_once_and_the_rest_only_when_asked(
    qapp: Any, tmp_path: Path
) -> None:
    # a report whose check is not known (no support recorded) is not called verified
    text = report_markdown(ReportContent("What is Milvus?", REPORT, tuple(EVIDENCE)))
    assert "*3 of 4 sentences cited, not verified*" in text
    assert text.count("## Sources") == 1 and "## Open questions" in text
    assert re.findall(r"^- \[(\d+)\]", text, re.M) == ["1", "2"]
    assert "Bananas" not in text and "Also consulted" not in text
    full = report_markdown(
        ReportContent("What is Milvus?", REPORT, tuple(EVIDENCE)), include_consulted=True
    )
    assert re.findall(r"^- \[(\d+)\]", full, re.M) == ["1", "2", "3", "4"]
    assert full.index("## Also consulted") < full.index("[3] **Bananas**")
    path = export_report(tmp_path / "report.pdf", "What is Milvus?", REPORT, EVIDENCE)
    pdf = _pdf_text(path)
    assert "3 of 4 sentences cited, not verified" in pdf and "Bananas" not in pdf


def _pdf_text(path: Path) -> str:
    """The PDF's text, its ligatures (ﬂ) undone and its spacing made single."""
    text = " ".join(page.extract_text() for page in PdfReader(str(path)).pages)
    return " ".join(unicodedata.normalize("NFKC", text).split())


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _html_text(path: Path) -> str:
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return " ".join(" ".join(parser.parts).split())


QUESTION = "What is Milvus and which index types does it support?"
BUDGET = Budget(max_rounds=1, max_subqueries=1, top_k=5, max_seconds=300, max_concurrent_calls=1)


def _presenter(qtbot: Any) -> RunPresenter:
    view, table = ReportView(), EntityTableView()
    qtbot.addWidget(view)
    qtbot.addWidget(table)
    return RunPresenter(ResearchTreeModel(), view, table)


def test_a_real_run_shows_the_same_header_and_sources_live_reopened_and_exported(
    qtbot: Any, aloop: Any, starter_llm: Any, tmp_path: Path
) -> None:
    paths = AppPaths(tmp_path / "config", tmp_path / "data", tmp_path / "cache").ensure()
    runs = RunStore.open(paths)
    live = _presenter(qtbot)
    events: list[ResearchEvent] = []

    async def run() -> None:
        engine = ResearchEngine(starter_llm, MemoryLibrary(list(MILVUS_CHUNKS)), runs)
        options = {"report_max_tokens": 160, "prompt_chars": 3000}
        async for event in engine.run(QUESTION, mode="quick", budget=BUDGET, options=options):
            events.append(event)
            live.feed(event)

    try:
        await_in_test(qtbot, run(), timeout_ms=600_000)
        final = events[-1]
        assert isinstance(final, Finished), final
        report = final.report
        support = report.support
        assert support is not None
        assert support == sentence_support(
            report.markdown, report.citations, "word and meaning overlap"
        )
        assert support.sentences >= 1

        # the report's numbering: the cited sources are 1..C in order of first citation,
        # listed once each; the others follow, outside the text
        body, tail = split_report(report.markdown)
        numbers = sorted(e.number for e in report.evidence)
        cited = first_cited(body, numbers)
        assert cited == list(range(1, len(cited) + 1))
        assert [int(n) for n in re.findall(r"^- \[(\d+)\]", tail, re.M)] == cited
        assert set(cited_numbers(body)) <= set(numbers) and numbers == list(
            range(1, len(numbers) + 1)
        )

        # the live window
        view = live.report_view
        # the starter wrote it: the header says so first
        assert report.provenance is not None and report.provenance.starter
        headline = support_headline(support)
        header = f"{STARTER_HEADER} {headline}"
        assert view.header_text() == header == _first_block(view)
        assert view.uncited_marks() == support.sentences - support.cited
        assert [e.number for e in view.consulted()] == [n for n in numbers if n not in cited]
        assert set(live.evidence) == set(numbers)
        shown = view.toPlainText()

        # reopened from History: the same header, text, marks and consulted list
        stored = [e for e in runs.load_events(final.run_id) if isinstance(e, ResearchEvent)]
        assert stored == events
        reopened = _presenter(qtbot)
        reopened.replay(stored)
        again = reopened.report_view
        assert again.header_text() == header and again.toPlainText() == shown
        assert [e.number for e in again.consulted()] == [e.number for e in view.consulted()]

        # exported as the window exports it (the shown text and the run's evidence)
        def export(name: str, **kwargs: Any) -> Path:
            evidence = list(reopened.evidence.values())
            return export_report(
                tmp_path / name,
                QUESTION,
                again.markdown_text(),
                evidence,
                support=support,
                provenance=report.provenance,
                **kwargs,
            )

        md = export("report.md").read_text(encoding="utf-8")
        assert f"*{STARTER_HEADER}*" in md and f"*{headline}*" in md and md.count("## Sources") == 1
        assert "## Provenance" in md and "Research model: SmolLM2" in md
        assert [int(n) for n in re.findall(r"^- \[(\d+)\]", md, re.M)] == cited
        assert "Also consulted" not in md
        if len(cited) < len(numbers):
            full = export("full.md", include_consulted=True).read_text(encoding="utf-8")
            assert [int(n) for n in re.findall(r"^- \[(\d+)\]", full, re.M)] == numbers
        assert headline in _html_text(export("report.html")) and STARTER_HEADER in _html_text(
            export("report.html")
        )
        assert headline in _pdf_text(export("report.pdf"))
    finally:
        runs.close()


def test_a_theme_switch_recolours_the_open_report_s_citations(qtbot: Any, qapp: Any) -> None:
    from PySide6.QtGui import QPalette

    from app.ui.safe_document import fragments
    from app.ui.theme import dark_palette

    view = ReportView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    support = sentence_support(REPORT, CITATIONS, "word and meaning overlap")
    view.show_finished(REPORT, known={1, 2, 3, 4}, citations=CITATIONS, support=support)

    def link_colours() -> set[str]:
        doc = view.document()
        return {
            fmt.foreground().color().name()
            for _, _, fmt in fragments(doc)
            if fmt.isAnchor() and not fmt.fontStrikeOut()
        }

    light = qapp.palette()
    try:
        qapp.setPalette(dark_palette())
        dark_link = dark_palette().color(QPalette.ColorRole.Link).name()
        assert dark_link != light.color(QPalette.ColorRole.Link).name()
        qtbot.waitUntil(
            lambda: link_colours() == {dark_link}, timeout=5_000
        )  # without reopening the report
    finally:
        qapp.setPalette(light)
    qtbot.waitUntil(
        lambda: link_colours() == {light.color(QPalette.ColorRole.Link).name()}, timeout=5_000
    )
