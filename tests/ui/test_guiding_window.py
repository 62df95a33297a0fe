"""A window that guides (issue 15, section 5), with real widgets, the real engine
over an in-memory library and a scripted model: Run on an empty library says
what to do and calls no model; the window fits the screen, keeps its place and
shows every control at 1366×768; the modes explain themselves; long file names
are elided in the middle; a single dropped file names its collection; a run
reopened from History brings back its mode, collections and budget, and the
detail pane clears for a new run."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import EngineServices, await_in_test, drive, drop_paths, run_to_the_end
from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from app.core.events import FileDone, IngestEvent, IngestFinished, IngestStarted
from app.core.models import Budget, Collection, Document, DocumentStatus
from app.core.paths import app_paths
from app.research.engine import ResearchEngine
from app.research.modes import USER_MODES
from app.ui.library_controller import collection_name_for
from app.ui.library_model import document_row, library_rows
from app.ui.main_window import MAX_SIZE, WINDOW_STATE_FILE, MainWindow
from app.ui.research_panel import MODES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel

pytestmark = pytest.mark.gui

QUESTION = "What is Milvus?"
REPORT = "Milvus is an open-source vector database built for similarity search [1]."
LONG_NAME = "a-very-long-file-name-" + "that-goes-on-and-on-" * 8 + "and-ends-here.pdf"


class EmptyCatalog:
    """The catalog of a :class:`StoredLibrary`: it lists no documents."""

    def document_rows(self, collection: str) -> list[tuple[str, str, str, int, str]]:
        return []


class StoredLibrary(MemoryLibrary):
    """An in-memory library the window holds as its own (with collections as the catalog lists them)."""

    def __init__(self, collections: Sequence[Collection] = (), chunks: Sequence[Any] = ()) -> None:
        super().__init__(list(chunks))
        self.listed = list(collections)
        self.recovery = None
        self.notices: list[str] = []
        self.catalog = EmptyCatalog()
        self.ingested: list[tuple[list[Path], str]] = []

    async def collections(self) -> list[Collection]:
        return list(self.listed)

    async def documents(self, collection: str) -> list[Document]:
        return []

    async def ingest(self, paths: Sequence[Path], collection: str) -> AsyncIterator[IngestEvent]:
        self.ingested.append((list(paths), collection))
        yield IngestStarted(collection=collection, total_files=len(paths))
        yield IngestFinished(
            collection=collection,
            indexed=1,
            unchanged=0,
            skipped=0,
            failed=0,
            removed=0,
            chunks=1,
            elapsed_s=0.1,
        )

    async def aclose(self) -> None:
        return None


@pytest.fixture
def make_window(qapp: Any, qloop: Any, aloop: Any) -> Iterator[Callable[..., MainWindow]]:
    made: list[MainWindow] = []

    def make(model: Any = None, library: StoredLibrary | None = None) -> MainWindow:
        engine = ResearchEngine(
            model or ScriptedModel(text=REPORT),
            MemoryLibrary(list(MILVUS_CHUNKS)),  # type: ignore[arg-type]
            history=app_paths().ensure().catalog_file,
        )
        services = EngineServices(engine)
        window = MainWindow(services)
        # the library the window opened (not the engine's: it only searches)
        if library is not None:
            services.library = library  # type: ignore[assignment]
            window.library_panel.set_library(library)  # type: ignore[arg-type]
        window.show()
        window.research_panel.set_running(False, ready=True)
        made.append(window)
        return window

    yield make
    for window in made:
        drive(qloop, window.shutdown())
        window.close()
        window.deleteLater()


# -- an empty library -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("collections", "scope", "said"),
    [
        ((), (), "The library is empty."),
        (
            (Collection("empty"), Collection("full", documents=2)),
            ("empty",),
            "The collection empty has no indexed",
        ),
    ],
)
def test_run_on_nothing_to_search_says_add_documents_first_and_calls_no_model(
    qtbot: Any,
    make_window: Callable[..., MainWindow],
    collections: tuple[Collection, ...],
    scope: tuple[str, ...],
    said: str,
) -> None:
    model = ScriptedModel(text=REPORT)
    window = make_window(model, StoredLibrary(collections))
    qtbot.waitUntil(
        lambda: window.research_panel.collection_names() == [c.name for c in collections],
        timeout=5_000,
    )
    window.research_panel.set_scope(list(scope))
    window.research_panel.question.setPlainText(QUESTION)
    with qtbot.waitSignal(
        window.runs.runningChanged, timeout=10_000, check_params_cb=lambda running: not running
    ):
        window.research_panel.run_button.click()

    shown = window.banner.text()
    assert window.banner.isVisible() and shown.startswith("Add documents first: ") and said in shown
    assert "Drop a folder" in shown and "Add folder…" in shown  # what to do about it
    assert model.calls == [] and window.presenter.events == []  # no model call, no run
    assert (
        window.research_panel.run_button.isEnabled()
        and not window.research_panel.stop_button.isEnabled()
    )
    assert await_in_test(qtbot, window.services.history.list_runs()) == []  # nothing was saved
    assert window.errors == []


def test_a_collection_with_documents_in_scope_runs(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window(
        library=StoredLibrary([Collection("empty"), Collection("full", documents=2)])
    )
    qtbot.waitUntil(
        lambda: window.research_panel.collection_names() == ["empty", "full"], timeout=5_000
    )
    window.research_panel.mode.setCurrentIndex(window.research_panel.mode.findData("quick"))
    window.research_panel.question.setPlainText(QUESTION)
    run_to_the_end(qtbot, window, timeout_ms=30_000)  # all collections: one of them has documents
    assert not window.banner.isVisible()


# -- size and place ------------------------------------------------------------------------------------------


def inside(widget: QWidget, window: MainWindow) -> bool:
    """The widget is shown, not squeezed to nothing, and wholly inside the window."""
    top_left = widget.mapTo(window, widget.rect().topLeft())
    area = QRect(top_left, widget.size())
    return (
        widget.isVisible()
        and widget.width() > 4
        and widget.height() > 4
        and window.rect().contains(area)
    )


def test_every_control_is_visible_at_1366_by_768(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window()
    window.resize(1366, 728)  # 768 less a taskbar
    qtbot.waitUntil(
        lambda: window.size().width() == 1366 and window.size().height() == 728, timeout=5_000
    )
    qtbot.waitExposed(window)
    panel, library = window.research_panel, window.library_panel
    controls = {
        "Run": panel.run_button,
        "Stop": panel.stop_button,
        "question": panel.question,
        "mode": panel.mode,
        "mode help": panel.mode_help,
        "scope": panel.scope_button,
        "rounds": panel.rounds,
        "top-k": panel.top_k,
        "tree": panel.tree,
        "detail": panel.detail,
        "report": window.report,
        "Add folder": library.add_button,
        "Add files": library.add_files_button,
        "Remove": library.remove_button,
        "collections": library.tree,
        "drop zone": library.drop_zone,
    }
    hidden = [name for name, widget in controls.items() if not inside(widget, window)]
    assert hidden == [], f"not fully visible at 1366×728: {hidden}"
    assert window.minimumSizeHint().width() <= 1366 and window.minimumSizeHint().height() <= 728

    window.left_tabs.setCurrentWidget(window.history_panel)
    history = window.history_panel
    qtbot.waitUntil(history.isVisible, timeout=5_000)
    controls = {
        "history": history.runs,
        "Open": history.open_button,
        "Export": history.export_button,
    }
    hidden = [name for name, widget in controls.items() if not inside(widget, window)]
    assert hidden == [], f"not fully visible at 1366×728: {hidden}"


@pytest.mark.parametrize(
    ("area", "size"),
    [
        (QRect(0, 0, 1366, 728), (1093, 582)),  # a laptop less its taskbar: 80 % of it
        (QRect(0, 0, 1920, 1040), (1536, 832)),
        (QRect(1920, 0, 3840, 2120), MAX_SIZE),  # a large second screen: capped, on that screen
    ],
)
def test_the_window_opens_at_a_share_of_its_screen_centred(
    qtbot: Any, make_window: Callable[..., MainWindow], area: QRect, size: tuple[int, int]
) -> None:
    window = make_window()
    window.fit_area(area)
    least = window.minimumSizeHint()
    expected = (max(size[0], least.width()), max(size[1], least.height()))
    assert (window.width(), window.height()) == expected
    assert area.contains(window.frameGeometry()) or window.size() == least
    assert abs(window.frameGeometry().center().x() - area.center().x()) <= 1


def test_the_window_opens_no_larger_than_its_screen(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window()
    screen = window.screen()
    assert screen is not None
    area = screen.availableGeometry()  # offscreen: 800×800, less than the window needs
    least = window.minimumSizeHint()
    assert window.width() <= max(area.width(), least.width()) and window.height() <= max(
        area.height(), least.height()
    )


def test_the_window_reopens_where_it_was_closed(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    first = make_window()
    screen = first.screen()
    assert screen is not None
    area, least = screen.availableGeometry(), first.minimumSizeHint()
    # a size the screen holds (offscreen: 800×800, narrower than the window can be) and not the one it opens at
    target = QSize(least.width(), min(area.height(), least.height() + 150))
    assert first.size() != target
    first.resize(target)
    qtbot.waitUntil(lambda: first.size() == target, timeout=5_000)
    where = first.pos()
    first.close()  # what closing leaves is saved by the shutdown, off the GUI thread
    await_in_test(qtbot, first.save_geometry())
    assert (first.services.paths.config_dir / WINDOW_STATE_FILE).is_file()

    second = make_window()
    assert second.size() != target
    assert await_in_test(qtbot, second.restore_geometry())
    qtbot.waitUntil(lambda: second.size() == target, timeout=5_000)
    assert second.pos() == where


def test_the_report_gets_the_room_and_the_columns_move_and_are_kept(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window()
    window.resize(1366, 728)  # 768 less a taskbar
    qtbot.waitUntil(lambda: window.size().width() == 1366, timeout=5_000)
    qtbot.waitExposed(window)
    window.research_panel.mode.setCurrentIndex(window.research_panel.mode.findData("quick"))
    window.research_panel.question.setPlainText(QUESTION)
    run_to_the_end(qtbot, window, timeout_ms=30_000)
    split = window.main_split
    assert window.report_column.width() >= 0.45 * window.width(), split.sizes()  # the widest column
    assert window.report_column.width() == max(split.sizes())
    assert window.left_tabs.isVisible() and window.library_action.isChecked()

    # the library folds away (View → Library, Ctrl+L) and comes back
    before = window.report_column.width()
    window.library_action.trigger()
    qtbot.waitUntil(lambda: split.sizes()[0] == 0, timeout=5_000)
    assert window.report_column.width() > before and not window.library_action.isChecked()
    window.library_action.trigger()
    qtbot.waitUntil(lambda: split.sizes()[0] > 0, timeout=5_000)
    assert (
        window.library_action.isChecked()
        and window.left_tabs.width() >= window.left_tabs.minimumSizeHint().width()
    )

    # the handle between the research and the report is dragged 60 px to the left
    handle = split.handle(2)
    start = handle.rect().center()
    research, report = split.sizes()[1], split.sizes()[2]
    QTest.mousePress(handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(
        handle, start - QPoint(60, 0)
    )  # (the handle moves with it: one move, then let go there)
    QTest.mouseRelease(
        handle, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, handle.rect().center()
    )
    qtbot.waitUntil(lambda: split.sizes()[2] > report, timeout=5_000)
    assert abs(split.sizes()[1] - (research - 60)) <= 2, (split.sizes(), research, report)
    moved = split.sizes()

    # a resize keeps the user's shares of the width; the next start opens with them
    window.resize(1200, 728)
    qtbot.waitUntil(lambda: window.size().width() == 1200, timeout=5_000)
    window.resize(1366, 728)
    qtbot.waitUntil(lambda: window.size().width() == 1366, timeout=5_000)
    assert all(abs(a - b) <= 2 for a, b in zip(split.sizes(), moved, strict=True)), (
        split.sizes(),
        moved,
    )
    screen = window.screen()  # offscreen: 800×800; a saved place is kept within its screen
    assert screen is not None
    window.resize(min(1366, screen.availableGeometry().width() - 10), 600)
    qtbot.waitUntil(lambda: window.width() < 1366, timeout=5_000)
    window.close()
    await_in_test(qtbot, window.save_geometry())
    second = make_window()
    assert await_in_test(qtbot, second.restore_geometry())
    second.resize(
        1366, 728
    )  # (a size the offscreen screen cannot restore: columns at their least below it)
    qtbot.waitUntil(lambda: second.size().width() == 1366, timeout=5_000)
    shares = second.main_split.sizes()
    assert all(abs(a - b) <= 2 for a, b in zip(shares, moved, strict=True)), (shares, moved)


class NamedModel:
    """The model the window's services hold (the engine has its own): a name, nothing to run."""

    model_path = "/models/smollm2-135m.gguf"

    async def aclose(self) -> None:
        return None


def run_quick(qtbot: Any, window: MainWindow) -> None:
    window.research_panel.mode.setCurrentIndex(window.research_panel.mode.findData("quick"))
    window.research_panel.question.setPlainText(QUESTION)
    run_to_the_end(qtbot, window, timeout_ms=30_000)


def test_the_starter_notice_is_one_line_and_once_dismissed_stays_so_until_the_model_changes(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    notice = "Using the starter model SmolLM2-135M-Instruct: a tiny model for a first try. " * 3
    window = make_window()
    window.resize(1366, 728)
    services = window.services
    services.model, services.model_notice = NamedModel(), notice  # type: ignore[assignment]
    run_quick(qtbot, window)
    banner = window.banner
    assert banner.isVisible() and banner.text() == notice
    banner.add("The settings file is not valid TOML. Fathom started with default settings.")
    line = banner.label.fontMetrics().height()
    assert banner.label.height() <= 2 * line  # one compact line, however many messages
    assert (
        banner.label.text().endswith("…") and banner.label.toolTip() == banner.text()
    )  # the whole text on hover

    banner.dismiss()  # ✕
    qtbot.waitUntil(
        lambda: services.settings.ui.dismissed_model_notice == NamedModel.model_path, timeout=5_000
    )
    run_quick(qtbot, window)
    assert not banner.isVisible()  # not again on the next run
    saved = app_paths().settings_file.read_text(encoding="utf-8")
    assert NamedModel.model_path in saved  # nor on the next start

    NamedModel.model_path = "/models/another.gguf"  # another model: its notice is news
    try:
        run_quick(qtbot, window)
        assert banner.isVisible() and banner.text() == notice
    finally:
        NamedModel.model_path = "/models/smollm2-135m.gguf"


def test_a_damaged_window_state_is_ignored(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window()
    size = window.size()
    state = window.services.paths.config_dir / WINDOW_STATE_FILE
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("{not json", encoding="utf-8")
    assert not await_in_test(qtbot, window.restore_geometry())
    assert window.size() == size


# -- the modes explain themselves ------------------------------------------------------------------------------


def test_each_mode_has_a_one_line_explanation_under_the_selector(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    panel = make_window().research_panel
    names = [panel.mode.itemData(i) for i in range(panel.mode.count())]
    assert sorted(names) == sorted(USER_MODES)
    shown: dict[str, str] = {}
    for i, name in enumerate(names):
        panel.mode.setCurrentIndex(i)
        assert panel.mode_help.isVisible()
        shown[name] = panel.mode_help.text()
        assert panel.mode.itemData(i, Qt.ItemDataRole.ToolTipRole) == shown[name]
    assert all(text and "\n" not in text for text in shown.values())
    assert len(set(shown.values())) == len(names) and shown == MODES
    assert (
        "reasoning model" in shown["hds"] and "table" in shown["table"] and "plan" in shown["plan"]
    )


# -- long file names ----------------------------------------------------------------------------------------


def test_long_file_names_are_elided_in_the_middle_with_the_full_path_as_tooltip(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window(library=StoredLibrary())
    path = f"/home/someone/documents/reports/{LONG_NAME}"
    library = window.library_panel
    document = Document(
        doc_id="d1",
        collection="docs",
        path=path,
        status=DocumentStatus.INDEXED,
        chunk_count=3,
        content_hash="",
    )
    collections = [Collection("docs", documents=1)]
    library.controller.catalogChanged.emit(
        collections, library_rows(collections, {"docs": [document_row(document)]})
    )
    item = library.collection_index("docs")
    assert item.isValid() and library.model.rowCount(item) == 1
    row = library.model.index(0, 0, item)
    library.tree.expand(item)
    assert library.tree.textElideMode() == Qt.TextElideMode.ElideMiddle
    assert path in row.data(Qt.ItemDataRole.ToolTipRole)
    assert library.tree.visualRect(row).width() < library.tree.fontMetrics().horizontalAdvance(
        row.data()
    )

    ingest = library.ingest
    ingest.start("Scanning for docs…")
    ingest.show_event(IngestStarted(collection="docs", total_files=1))
    ingest.show_event(
        FileDone(collection="docs", path=path, status="failed", reason="it is not a PDF")
    )
    for view in (ingest.files, ingest.failures):
        listed = view.item(0)
        assert listed is not None and path in listed.toolTip()
        assert view.textElideMode() == Qt.TextElideMode.ElideMiddle and not view.wordWrap()
        qtbot.waitUntil(
            lambda view=view: view.isVisible() and view.viewport().width() > 20, timeout=5_000
        )
        view.doItemsLayout()
        rect = view.visualItemRect(listed)
        assert (
            0 < rect.width() <= view.viewport().width()
        )  # as wide as the list, not as the name: elided
        assert rect.width() < view.fontMetrics().horizontalAdvance(listed.text())
        assert (
            view.horizontalScrollBar().maximum() == 0
        )  # nothing to scroll to: the middle is left out


# -- naming a collection from a drop ----------------------------------------------------------------------------


def test_collection_names_from_dropped_paths(tmp_path: Path) -> None:
    folder = tmp_path / "Project Notes"
    folder.mkdir()
    one = tmp_path / "inbox" / "Annual Report 2024.pdf"
    one.parent.mkdir()
    one.write_bytes(b"%PDF")
    other = one.with_name("minutes.md")
    other.write_text("x", encoding="utf-8")
    assert collection_name_for([one]) == "annual_report_2024"
    assert collection_name_for([folder, one]) == "project_notes"
    assert collection_name_for([one, other]) == "inbox"


def test_a_single_dropped_file_makes_a_collection_named_after_it(
    qtbot: Any, make_window: Callable[..., MainWindow], tmp_path: Path
) -> None:
    library = StoredLibrary()
    window = make_window(library=library)
    qtbot.waitUntil(window.library_panel.drop_zone.isEnabled, timeout=5_000)
    dropped = tmp_path / "downloads" / "Quarterly Figures.md"
    dropped.parent.mkdir()
    dropped.write_text("# Figures\n", encoding="utf-8")
    assert drop_paths(window.library_panel.drop_zone, [dropped]) == (True, True)
    qtbot.waitUntil(lambda: bool(library.ingested), timeout=10_000)
    assert library.ingested == [([dropped], "quarterly_figures")]
    qtbot.waitUntil(lambda: window.library_controller.idle, timeout=10_000)


# -- History brings a run back whole ---------------------------------------------------------------------------


def test_reopening_a_run_restores_its_mode_collections_and_budget_and_a_new_run_clears_the_detail(
    qtbot: Any, make_window: Callable[..., MainWindow]
) -> None:
    window = make_window()
    panel = window.research_panel
    panel.set_collections([Collection("docs", documents=5), Collection("other", documents=1)])
    panel.question.setPlainText(QUESTION)
    panel.mode.setCurrentIndex(panel.mode.findData("quick"))
    panel.set_scope(["docs"])
    panel.rounds.setValue(3)
    panel.subqueries.setValue(2)
    panel.max_tokens.setValue(55_000)
    panel.max_minutes.setValue(7)
    panel.top_k.setValue(4)
    asked: Budget = panel.budget()
    final = run_to_the_end(qtbot, window, timeout_ms=30_000)

    # the panel moves on to another question
    panel.question.setPlainText("Something else")
    panel.mode.setCurrentIndex(panel.mode.findData("deep"))
    panel.set_scope([])
    for spin in (panel.rounds, panel.subqueries, panel.max_tokens, panel.max_minutes, panel.top_k):
        spin.setValue(spin.minimum())
    # a node is selected: its text is in the detail pane
    first = window.tree_model.index(0, 0)
    panel.tree.setCurrentIndex(first)
    assert panel.detail.toPlainText()

    history = window.history_panel
    history.select_run(final.run_id)
    with qtbot.waitSignal(window.runs.runOpened, timeout=10_000):
        history.open_button.click()
    assert panel.question_text() == QUESTION and panel.mode_name() == "quick"
    assert panel.scope().collections == ("docs",) and panel.scope_button.text() == "docs"
    assert panel.budget() == asked
    assert panel.detail.toPlainText() == ""  # the tree was replaced: nothing is selected

    panel.tree.setCurrentIndex(window.tree_model.index(0, 0))
    assert panel.detail.toPlainText()
    with qtbot.waitSignal(window.runs.runningChanged, timeout=10_000):
        panel.run_button.click()
    assert panel.detail.toPlainText() == ""  # a new run starts with an empty detail pane
    qtbot.waitUntil(lambda: not window.runs.running, timeout=30_000)
