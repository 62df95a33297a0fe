"""Saved runs open: runs written before events had a schema version replay as
they did, and a damaged or unknown event costs that event (with a note that
says so), never the run."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_fixture import DEEP_RUN, EXPECTED, STOPPED_RUN, TABLE_RUN, outline, restore, sha256

from app.core.events import Finished, Notice, RunStarted
from app.core.paths import app_paths
from app.research.tree import build_tree
from app.store.research_runs import RunStore


@pytest.fixture
def history() -> Iterator[RunStore]:
    """The saved runs, in this test's catalog file (a real SQLite file)."""
    store = RunStore(restore(app_paths().ensure().catalog_file))
    yield store
    store.close()


def damage(store: RunStore, run_id: str, seq: int, data: str) -> None:
    with store.db.conn:
        store.db.execute(
            "UPDATE research_events SET data = ? WHERE run_id = ? AND seq = ?", [data, run_id, seq]
        )


def stored_json(store: RunStore, run_id: str, seq: int) -> dict[str, Any]:
    row = store.db.execute(
        "SELECT data FROM research_events WHERE run_id = ? AND seq = ?", [run_id, seq]
    ).fetchone()
    data: dict[str, Any] = json.loads(row[0])
    return data


@pytest.mark.parametrize("run_id", [DEEP_RUN, TABLE_RUN, STOPPED_RUN])
def test_a_run_saved_before_schema_versions_replays_its_tree_report_and_evidence(
    history: RunStore, run_id: str
) -> None:
    expected = EXPECTED[run_id]
    summary = history.get_run(run_id)
    assert summary is not None
    assert (summary.status, summary.stop_reason, summary.mode, summary.question) == (
        expected["status"],
        expected["stop_reason"],
        expected["mode"],
        expected["question"],
    )
    stored = history.read_events(run_id)
    assert stored.skipped == () and stored.note == "" and stored.rebuilt == ()
    assert len(stored.events) == expected["events"]
    assert sorted({e.kind for e in stored.events}) == expected["event_types"]
    replayed = stored.replay_events()
    assert replayed == list(stored.events)  # nothing added to a run that reads whole
    tree = build_tree(replayed)
    assert outline(tree) == expected["tree"]
    assert tree.status == expected["root_status"]
    assert {k: tree.detail.get(k) for k in expected["root"]} == expected["root"]
    final = replayed[-1]
    assert isinstance(final, Finished)
    assert sha256(final.report.markdown) == expected["report_sha256"]
    assert history.load_report(run_id) == final.report
    assert [e.chunk_id for e in history.load_evidence(run_id)] == expected["evidence"]
    assert [e.chunk_id for e in final.report.evidence] == expected["evidence"]
    table = final.report.table
    assert (len(table.rows) if table is not None else None) == expected["table_rows"]


def test_unreadable_events_are_skipped_counted_and_noted(history: RunStore) -> None:
    extra = stored_json(history, DEEP_RUN, 9)  # a ChunkJudged
    judged = f"{extra['node_id']}/{extra['chunk_id']}"
    damage(
        history, DEEP_RUN, 9, json.dumps({**extra, "mood": "sure"})
    )  # a field no ChunkJudged has
    damage(history, DEEP_RUN, 36, "{not json")
    damage(
        history,
        DEEP_RUN,
        37,
        json.dumps({**stored_json(history, DEEP_RUN, 37), "type": "ReportDeltaV9"}),
    )
    usage = stored_json(history, DEEP_RUN, 138)
    usage["total"]["prompt_tokens"] = "many"
    damage(history, DEEP_RUN, 138, json.dumps(usage))
    notice = stored_json(history, DEEP_RUN, 137)
    del notice["message"]
    damage(history, DEEP_RUN, 137, json.dumps(notice))

    stored = history.read_events(DEEP_RUN)
    assert [s.seq for s in stored.skipped] == [9, 36, 37, 137, 138]
    assert [s.type for s in stored.skipped] == [
        "ChunkJudged",
        "ReportDelta",
        "ReportDelta",
        "Notice",
        "UsageUpdated",
    ]
    assert len(stored.events) == EXPECTED[DEEP_RUN]["events"] - 5
    assert stored.note.startswith("5 events of this run could not be read and were skipped (")
    assert "bad JSON" in stored.note and "unknown event type 'ReportDeltaV9'" in stored.note
    assert stored.rebuilt == ()  # start and end were readable

    replayed = stored.replay_events()
    assert isinstance(replayed[0], RunStarted)
    note = replayed[1]
    assert isinstance(note, Notice) and note.level == "warning" and note.message == stored.note
    tree = build_tree(replayed)
    assert tree.notices[0] == stored.note
    assert (
        "The model started repeating itself; its reply was cut there." not in tree.notices
    )  # the damaged one
    # everything else is as it was: the same nodes; only the chunk whose judgement was lost is unjudged
    expected_tree = [row[:3] + row[4:5] for row in EXPECTED[DEEP_RUN]["tree"]]
    assert [row[:3] + row[4:5] for row in outline(tree)] == expected_tree
    assert tree.find(judged) is not None and tree.find(judged).status == ""  # type: ignore[union-attr]
    final = replayed[-1]
    assert (
        isinstance(final, Finished)
        and sha256(final.report.markdown) == EXPECTED[DEEP_RUN]["report_sha256"]
    )


def test_a_run_whose_start_and_end_cannot_be_read_is_rebuilt_from_its_summary(
    history: RunStore,
) -> None:
    last = EXPECTED[DEEP_RUN]["events"]
    damage(history, DEEP_RUN, 1, "")
    damage(history, DEEP_RUN, last, json.dumps({"type": "Finished", "v": 99}))
    stored = history.read_events(DEEP_RUN)
    assert [s.seq for s in stored.skipped] == [1, last]
    assert "newer Fathom" in stored.note and "Rebuilt from the run's summary" in stored.note
    started, final = stored.events[0], stored.events[-1]
    assert isinstance(started, RunStarted) and started.question == EXPECTED[DEEP_RUN]["question"]
    assert isinstance(final, Finished) and final.stop_reason == EXPECTED[DEEP_RUN]["stop_reason"]
    assert sha256(final.report.markdown) == EXPECTED[DEEP_RUN]["report_sha256"]
    assert [e.chunk_id for e in final.report.evidence] == EXPECTED[DEEP_RUN]["evidence"]
    summary = history.get_run(DEEP_RUN)
    assert summary is not None and final.usage.total_tokens == summary.total_tokens
    tree = build_tree(stored.replay_events())
    assert tree.label == EXPECTED[DEEP_RUN]["question"] and tree.status == "finished"


def test_an_end_whose_report_is_damaged_falls_back_to_the_saved_text(history: RunStore) -> None:
    last = EXPECTED[DEEP_RUN]["events"]
    damage(history, DEEP_RUN, last, "[]")
    with history.db.conn:
        history.db.execute(
            "UPDATE research_runs SET report = '{\"markdown\": 5' WHERE run_id = ?", [DEEP_RUN]
        )
    assert history.load_report(DEEP_RUN) is None
    final = history.read_events(DEEP_RUN).events[-1]
    assert isinstance(final, Finished)
    summary = history.get_run(DEEP_RUN)
    assert summary is not None and final.report.markdown == summary.report_markdown != ""
    assert [e.chunk_id for e in final.report.evidence] == EXPECTED[DEEP_RUN]["evidence"]


def test_damaged_summary_rows_still_list(history: RunStore) -> None:
    with history.db.conn:
        history.db.execute(
            "UPDATE research_runs SET collections = '[oops', started_at = 'yesterday', calls = NULL WHERE run_id = ?",
            [TABLE_RUN],
        )
        history.db.execute(
            "UPDATE research_evidence SET status = 'maybe' WHERE run_id = ? AND number = 1",
            [DEEP_RUN],
        )
        history.db.execute(
            "UPDATE research_evidence SET number = 'x' WHERE run_id = ? AND number = 2", [DEEP_RUN]
        )
    listed = {r.run_id: r for r in history.list_runs()}
    assert set(listed) == {DEEP_RUN, TABLE_RUN, STOPPED_RUN}
    damaged = listed[TABLE_RUN]
    assert damaged.collections == () and damaged.started_at == 0.0 and damaged.calls == 0
    assert damaged.question == EXPECTED[TABLE_RUN]["question"]
    evidence = history.load_evidence(DEEP_RUN)
    assert [e.chunk_id for e in evidence] == [
        c for i, c in enumerate(EXPECTED[DEEP_RUN]["evidence"]) if i != 1
    ]
    assert evidence[0].status == "unverified"


def run_command(name: str, *argv: str) -> int:
    import importlib

    module = importlib.import_module(f"app.commands.{name}")
    parser = argparse.ArgumentParser(prog=f"fathom {name}")
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(list(argv))))


def test_fathom_show_says_what_it_skipped(
    history: RunStore, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(history, DEEP_RUN, 9, "{not json")
    damage(history, DEEP_RUN, 36, json.dumps({"type": "Hologram", "run_id": DEEP_RUN}))
    history.close()

    assert run_command("show", DEEP_RUN) == 0
    out = capsys.readouterr().out
    assert "2 events of this run could not be read and were skipped (bad JSON" in out
    assert out.startswith(f"# {EXPECTED[DEEP_RUN]['question']}")
    saved = RunStore(app_paths().catalog_file)
    try:
        summary = saved.get_run(DEEP_RUN)
    finally:
        saved.close()
    assert summary is not None and summary.report_markdown.strip() in out

    assert run_command("show", DEEP_RUN, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [(s["seq"], s["type"]) for s in data["skipped_events"]] == [
        (9, "ChunkJudged"),
        (36, "ReportDelta"),
    ]
    assert len(data["events"]) == EXPECTED[DEEP_RUN]["events"] - 2
    assert data["note"].startswith("2 events of this run")

    assert run_command("show", TABLE_RUN) == 0
    assert "could not be read" not in capsys.readouterr().out


def test_fathom_history_lists_runs_with_damaged_rows(
    history: RunStore, capsys: pytest.CaptureFixture[str]
) -> None:
    with history.db.conn:
        history.db.execute(
            "UPDATE research_runs SET collections = '{' WHERE run_id = ?", [STOPPED_RUN]
        )
    history.close()
    assert run_command("history") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(
        any(r in line for line in lines) for r in (DEEP_RUN, TABLE_RUN, STOPPED_RUN)
    )


def test_the_fixture_is_untouched_sqlite(tmp_path: Path) -> None:
    """The dump restores to exactly the three runs (a guard against editing it by accident)."""
    conn = sqlite3.connect(restore(tmp_path / "catalog.sqlite"))
    try:
        runs = {row[0] for row in conn.execute("SELECT run_id FROM research_runs")}
        events = conn.execute("SELECT COUNT(*) FROM research_events").fetchone()[0]
        versions = conn.execute(
            "SELECT COUNT(*) FROM research_events WHERE data LIKE '%\"v\":%'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert runs == set(EXPECTED) and events == sum(e["events"] for e in EXPECTED.values())
    assert versions == 0  # written before events had a schema version
