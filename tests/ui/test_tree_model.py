"""The research tree model: Qt's model tester watches every insert, and the
model always shows exactly the engine's pure tree (``build_tree``)."""

from __future__ import annotations

from typing import Any

from ui_events import deep_run_events

from app.core.events import ReportDelta
from app.research.tree import build_tree
from app.ui.report_view import ReportView
from app.ui.run_presenter import RunPresenter
from app.ui.table_view import EntityTableView
from app.ui.tree_adapter import to_view
from app.ui.tree_model import KIND_ROLE, ResearchTreeModel, ViewNode


def _flatten(node: ViewNode, depth: int = 0) -> list[tuple[int, str, str, str]]:
    out = []
    for child in node.children:
        out.append((depth, child.kind, child.label, child.result))
        out += _flatten(child, depth + 1)
    return out


def test_model_mirrors_the_pure_tree_after_every_burst(qtmodeltester: Any) -> None:
    model = ResearchTreeModel()
    qtmodeltester.check(model)  # stays attached: every insert/change below is checked
    events = deep_run_events()
    seen = []
    for size in (1, 2, 5, 1, 9, 3, 40, 200):  # bursts of different sizes, like frames
        seen += events[len(seen) : len(seen) + size]
        model.apply(to_view(build_tree(seen)))
        assert model.shape() == _flatten(to_view(build_tree(seen)))
    assert len(seen) == len(events)
    kinds = [kind for _, kind, _, _ in model.shape()]
    assert kinds.count("round") == 2 and kinds.count("subquery") == 4 and kinds.count("chunk") == 12
    assert "reasoning" in kinds and "reflection" in kinds and "notice" in kinds


def test_rows_appear_in_event_order(qtmodeltester: Any) -> None:
    model = ResearchTreeModel()
    qtmodeltester.check(model)
    events = deep_run_events()
    for i in range(1, len(events) + 1):
        model.apply(to_view(build_tree(events[:i])))
    ids = [node_id for node_id in model.inserted_ids if "#" not in node_id]
    expected = [node.node_id for node in build_tree(events).walk() if node.node_id != "root"]
    assert sorted(ids) == sorted(expected)
    # rounds, sub-queries and their chunks were inserted in the order the events came
    order = [i for i in ids if i in ("r1", "r1q0", "r1q1", "r2", "r2q0", "r2q1")]
    assert order == ["r1", "r1q0", "r1q1", "r2", "r2q0", "r2q1"]


def test_running_nodes_show_running_then_done(qtmodeltester: Any) -> None:
    model = ResearchTreeModel()
    qtmodeltester.check(model)
    events = deep_run_events()
    partial = events[:3]  # run started, round 1, first sub-query (no search yet)
    model.apply(to_view(build_tree(partial)))
    sub = model.index_of("r1q0")
    assert sub.isValid() and sub.siblingAtColumn(1).data() == "searching…"
    model.apply(to_view(build_tree(events)))
    sub = model.index_of("r1q0")
    assert sub.siblingAtColumn(1).data() == "3 hits, 2 relevant"
    assert model.index_of("r1q0/c1").siblingAtColumn(1).data().endswith("not relevant")


def test_removed_and_reordered_rows_keep_the_model_valid(qtmodeltester: Any) -> None:
    model = ResearchTreeModel()
    qtmodeltester.check(model)
    a = ViewNode(
        "a",
        "round",
        "A",
        children=(ViewNode("a1", "subquery", "A1"), ViewNode("a2", "subquery", "A2")),
    )
    b = ViewNode("b", "round", "B")
    model.apply(ViewNode("root", "root", "", children=(a, b)))
    model.apply(
        ViewNode(
            "root",
            "root",
            "",
            children=(b, ViewNode("a", "round", "A*", children=(a.children[1],))),
        )
    )
    assert model.shape() == [
        (0, "round", "B", ""),
        (0, "round", "A*", ""),
        (1, "subquery", "A2", ""),
    ]
    model.apply(ViewNode("root", "root", ""))
    assert model.rowCount() == 0


def test_presenter_batches_a_burst_into_few_model_updates(qtbot: Any, qtmodeltester: Any) -> None:
    model = ResearchTreeModel()
    qtmodeltester.check(model)
    report, table = ReportView(), EntityTableView()
    qtbot.addWidget(report)
    qtbot.addWidget(table)
    presenter = RunPresenter(model, report, table)
    events = deep_run_events()
    for event in events[:-1]:  # a burst: everything but Finished, in one go
        presenter.feed(event)
    assert presenter.flush_count == 0  # nothing applied synchronously per event
    qtbot.waitUntil(lambda: presenter.flush_count >= 1, timeout=2000)
    assert presenter.flush_count == 1
    assert model.shape() == _flatten(to_view(build_tree(events[:-1])))
    presenter.feed(events[-1])
    assert presenter.state == "finished"
    assert report.markdown_text() == "".join(e.text for e in events if isinstance(e, ReportDelta))
    # [2] was found unsupported, [3] cites no source: both flagged
    assert set(report.unsupported_citations()) == {2, 3}
    top = [model.index(r, 0).data(KIND_ROLE) for r in range(model.rowCount())]
    assert top == ["round", "round", "report", "notice"]


def test_passages_show_one_scale_their_search_rank_with_a_tooltip_that_says_so(
    qtmodeltester: Any, tmp_path: Any
) -> None:
    """Real saved runs (a deep run's hybrid searches, a table run's BM25 and dense searches:
    scores on different scales) show every passage as "#n of N", never a raw score."""
    import re

    from history_fixture import DEEP_RUN, TABLE_RUN, restore

    from app.core.events import SearchFinished
    from app.store.research_runs import RunStore
    from app.ui.tree_model import RESULT_TOOLTIP

    store = RunStore(restore(tmp_path / "catalog.sqlite"))
    try:
        runs = {run_id: store.read_events(run_id).events for run_id in (DEEP_RUN, TABLE_RUN)}
    finally:
        store.close()
    for run_id, events in runs.items():
        searches = [e for e in events if isinstance(e, SearchFinished) and e.hits]
        modes = {e.search_mode for e in searches}
        model = ResearchTreeModel()
        qtmodeltester.check(model)
        model.apply(to_view(build_tree(events)))
        chunks = [(label, result) for _, kind, label, result in model.shape() if kind == "chunk"]
        assert len(chunks) >= 3, run_id
        for _, result in chunks:
            assert re.fullmatch(r"#\d+ of \d+ · (relevant|not relevant|not judged)", result), (
                run_id,
                result,
            )
        first = searches[0]
        best = build_tree(events).find(f"{first.node_id}/{first.hits[0].chunk.chunk_id}")
        assert (
            best is not None and best.detail["rank"] == 1 and best.detail["of"] == len(first.hits)
        )
        assert modes == (
            {"hybrid"} if run_id == DEEP_RUN else {"bm25", "dense"}
        )  # RRF, BM25 and cosine scores
        # the Result cell of a passage explains the scale
        rows = [model.index(r, 0) for r in range(model.rowCount())]
        found = []
        while rows:
            index = rows.pop()
            if model.data(index, KIND_ROLE) == "chunk":
                found.append(
                    model.data(model.index(index.row(), 1, index.parent()), 3)
                )  # ToolTipRole
            rows += [model.index(r, 0, index) for r in range(model.rowCount(index))]
        assert found and all(tip == RESULT_TOOLTIP for tip in found)
    assert "closest match" in RESULT_TOOLTIP and "#2 of 10" in RESULT_TOOLTIP
