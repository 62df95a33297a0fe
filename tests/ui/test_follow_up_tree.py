"""A thread's tree in the window's model: a follow-up's rows hang under its own
branch, the Qt model mirrors the pure tree through every event of both runs (Qt's
model tester watching), and while the follow-up runs only its branch is running."""

from __future__ import annotations

import dataclasses
from typing import Any

from ui_events import deep_run_events

from app.core.events import ResearchEvent, RunStarted
from app.research.tree import build_tree
from app.ui.tree_adapter import to_view
from app.ui.tree_model import ResearchTreeModel


def follow_up_of(events: list[ResearchEvent], run_id: str) -> list[ResearchEvent]:
    """The same run's events again, as a follow-up run ``run_id`` of the first."""
    first = events[0]
    assert isinstance(first, RunStarted)
    out: list[ResearchEvent] = []
    for event in events:
        event = dataclasses.replace(event, run_id=run_id)
        if isinstance(event, RunStarted):
            event = dataclasses.replace(event, question="And then?", follows=first.run_id)
        out.append(event)
    return out


def test_a_follow_up_grows_as_a_branch_and_only_it_runs(qtmodeltester: Any) -> None:
    first = deep_run_events()
    second = follow_up_of(first, "run-2")
    model = ResearchTreeModel()
    qtmodeltester.check(model)
    seen: list[ResearchEvent] = []
    for event in [*first, *second]:
        seen.append(event)
        model.apply(to_view(build_tree(seen)))
        if event is second[2]:  # the follow-up is under way
            view = to_view(build_tree(seen))
            rows = {row.node_id: row for row in view.children}
            assert rows["followup:run-2"].status == "running"
            assert all(
                row.status != "running" for key, row in rows.items() if key != "followup:run-2"
            )

    tree = build_tree(seen)
    alone = build_tree(first)
    branch = tree.find("followup:run-2")
    assert (
        branch is not None and branch.kind == "followup" and branch.label == "Follow-up: And then?"
    )
    assert branch.status == "finished" and tree.status == "finished"
    # the first run's rows are as they were; the follow-up's are the same shape, one level down
    assert [c.node_id for c in tree.children[:-1]] == [c.node_id for c in alone.children]
    inner = [(n.kind, n.label) for n in branch.walk()][1:]
    assert inner == [(n.kind, n.label) for n in alone.walk()][1:]
    assert all(n.node_id.startswith("run-2/") for n in list(branch.walk())[1:])
    assert model.index_of("followup:run-2").isValid() and model.index_of("run-2/report").isValid()
