"""Export… in the window: the file dialog offers Markdown, HTML and PDF (CSV and JSON
for a table run), the file is written off the GUI thread with normal permissions by
the same exporter as ``fathom export``, and the second action adds the sources read
but not cited."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import await_in_test
from PySide6.QtWidgets import QFileDialog

from app.core.events import Finished, RunStarted
from app.core.models import EntityTable, Report, TableCell, Usage
from app.core.paths import app_paths
from app.core.settings import Settings
from app.export.markdown import CONSULTED_HEADING
from app.ui.main_window import MainWindow
from app.ui.services import Services

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "export"))
from hostile_run import OPEN_QUESTIONS, QUESTION, engine_sources, hostile_evidence
from read_back import read_markdown


def _window(qtbot: Any, shared_data: Path, table: EntityTable | None = None) -> MainWindow:
    window = MainWindow(Services(Settings(), app_paths().ensure()))
    qtbot.addWidget(window)
    evidence = hostile_evidence(shared_data)
    body = "".join(f"Milvus has limit {n} [{n}]. " for n in range(1, 13)) + "\n\n"
    report = Report(
        body + engine_sources(evidence) + "\n" + OPEN_QUESTIONS, tuple(evidence), table=table
    )
    window.presenter.replay(
        [
            RunStarted(run_id="run-1", question=QUESTION, mode="table" if table else "deep"),
            Finished(run_id="run-1", report=report, usage=Usage(), stop_reason="completed"),
        ]
    )
    return window


def _choose(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[str]:
    """Answer the save dialog with ``path``; returns the filters it was offered."""
    offered: list[str] = []

    def save(_parent: Any, _title: str, _start: str, filters: str) -> tuple[str, str]:
        offered.append(filters)
        return str(path), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save)
    return offered


def test_export_and_export_with_consulted_sources(
    qtbot: Any, aloop: Any, tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = _window(qtbot, shared_data)
    old = os.umask(0o022)
    try:
        offered = _choose(monkeypatch, tmp_path / "cited.md")
        window.export_action.trigger()
        qtbot.waitUntil(
            lambda: (tmp_path / "cited.md").exists() and window.export_action.isEnabled(),
            timeout=10_000,
        )
        assert offered == ["Markdown (*.md);;HTML (*.html);;PDF (*.pdf)"]
        cited = read_markdown((tmp_path / "cited.md").read_text(encoding="utf-8"))
        assert [n for n, _ in cited.sources()] == list(range(1, 13)) and CONSULTED_HEADING[
            3:
        ] not in cited.headings
        assert stat.S_IMODE((tmp_path / "cited.md").stat().st_mode) == 0o644

        _choose(monkeypatch, tmp_path / "all.md")
        window.export_all_action.trigger()
        qtbot.waitUntil(
            lambda: (tmp_path / "all.md").exists() and window.export_action.isEnabled(),
            timeout=10_000,
        )
        full = read_markdown((tmp_path / "all.md").read_text(encoding="utf-8"))
        assert [n for n, _ in full.sources("Also consulted")] == [13, 14]
    finally:
        os.umask(old)


def test_a_table_run_offers_csv_and_json(
    qtbot: Any, aloop: Any, tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = EntityTable(
        "database", ("licence",), (("Milvus", (TableCell("Apache-2.0", 0.9, "c1"),)),)
    )
    window = _window(qtbot, shared_data, table)
    offered = _choose(monkeypatch, tmp_path / "table.json")
    window.export_action.trigger()
    qtbot.waitUntil(
        lambda: (tmp_path / "table.json").exists() and window.export_action.isEnabled(),
        timeout=10_000,
    )
    assert offered == ["Markdown (*.md);;HTML (*.html);;PDF (*.pdf);;CSV (*.csv);;JSON (*.json)"]
    assert '"Apache-2.0"' in (tmp_path / "table.json").read_text(encoding="utf-8")
    # a report-only format from the same window still writes the report
    assert (
        await_in_test(qtbot, window.export_to(tmp_path / "report.pdf")) == tmp_path / "report.pdf"
    )
