"""``fathom export`` for real: the installed command in a subprocess, with no display,
over runs recorded in a temporary FATHOM_HOME."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from fathom_process import run_fathom
from hostile_run import record_hostile_run
from read_back import read_html, read_markdown, read_pdf

from app.core.models import EntityTable, Report, TableCell
from app.core.paths import app_paths
from app.research.entity_table import table_to_dict
from app.store.research_runs import RunStore

TABLE = EntityTable(
    "database",
    ("license", "language"),
    (
        (
            "Milvus",
            (
                TableCell("Apache-2.0", 0.9, "c1", "under the Apache 2.0 license"),
                TableCell("Go", 0.8, "c2"),
            ),
        ),
        ('Weaviate "quoted", | piped', (TableCell("BSD-3", 0.2, "c3"), TableCell("", 0.0, ""))),
    ),
)


def fathom(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The ``fathom`` script as a user runs it, with no display at all and umask 022."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["FATHOM_HOME"] = str(home)
    return run_fathom("export", *args, env=env, cwd=cwd, timeout=300, umask=0o022)


@pytest.fixture
def runs(fathom_home: Path, shared_data: Path) -> list[str]:
    """The hostile run, a table run, one still running and one that failed, recorded in FATHOM_HOME."""
    store = RunStore.open(app_paths())
    try:
        record_hostile_run(store, shared_data, run_id="hostile-0001")
        store.start_run(
            "table-0002", question="Which vector databases, under which license?", mode="table"
        )
        report = Report(markdown="The table lists two databases [1].\n", table=TABLE)
        store.finish_run("table-0002", status="finished", report=report)
        store.start_run("running-0004", question="Still going?", mode="quick")
        store.start_run("failed-0005", question="Failing?", mode="quick")
        store.finish_run("failed-0005", status="failed", message="the model is not running")
    finally:
        store.close()
    return ["hostile-0001", "table-0002", "running-0004", "failed-0005"]


def test_export_writes_every_format_that_reads_back(
    runs: list[str], fathom_home: Path, tmp_path: Path
) -> None:
    # Markdown to standard output, the run named by a prefix of its id
    md = fathom("hostile", "--format", "md", "-o", "-", home=fathom_home, cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    back = read_markdown(md.stdout)
    assert back.headings.count("Sources") == 1 and [n for n, _ in back.sources()] == list(
        range(1, 13)
    )
    assert "Also consulted" not in back.headings

    # HTML by the file's suffix, with the sources consulted but not cited
    html = fathom(
        "hostile-0001",
        "-o",
        "out/report.html",
        "--include-consulted",
        home=fathom_home,
        cwd=tmp_path,
    )
    assert html.returncode == 0, html.stderr
    assert "Exported to" in html.stderr
    back = read_html((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert [n for n, _ in back.sources("Also consulted")] == [13, 14]

    # PDF with no display: Qt's offscreen platform, started by the command itself
    pdf = fathom(
        "hostile-0001",
        "--format",
        "pdf",
        "-o",
        str(tmp_path / "report.pdf"),
        home=fathom_home,
        cwd=tmp_path,
    )
    assert pdf.returncode == 0, pdf.stderr
    back = read_pdf(tmp_path / "report.pdf")
    assert [n for n, _ in back.sources()] == list(range(1, 13))
    for name in ("out/report.html", "report.pdf"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644

    # the table as CSV and JSON
    assert fathom("table-0002", "-o", "t.csv", home=fathom_home, cwd=tmp_path).returncode == 0
    rows = list(csv.reader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8"))))
    assert [row[0] for row in rows] == ["database", "Milvus", 'Weaviate "quoted", | piped']
    out = fathom("table-0002", "--format", "json", home=fathom_home, cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout) == table_to_dict(TABLE)


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["nope", "-o", "x.md"], 1, "No research run 'nope'. List runs with `fathom history`."),
        (
            ["running-0004", "-o", "x.md"],
            1,
            "Run running-0004 is still in progress: export it when it has finished.",
        ),
        (
            ["failed-0005", "-o", "x.md"],
            1,
            "Run failed-0005 failed (the model is not running): it has no report",
        ),
        (["hostile-0001", "-o", "x.csv"], 1, "This run has no table to export as CSV"),
        (["hostile-0001", "-o", "notes.txt/report.md"], 1, "Cannot write notes.txt/report.md: "),
        (["hostile-0001", "-o", "report.txt"], 2, "Cannot tell the format from “.txt”"),
        (
            ["hostile-0001", "--format", "pdf", "-o", "-"],
            2,
            "A PDF cannot go to the terminal: give a file with -o",
        ),
    ],
)
def test_export_refuses_with_one_clear_sentence(
    runs: list[str], fathom_home: Path, tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    (tmp_path / "notes.txt").write_text("a file where a folder should be", encoding="utf-8")
    result = fathom(*args, home=fathom_home, cwd=tmp_path)
    assert result.returncode == code, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "x.md").exists() and not (tmp_path / "x.csv").exists()
