"""`fathom history` and `fathom show` over runs the engine recorded."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, verdicts

from app.core.errors import ModelUnavailable
from app.core.events import Failed, Finished, Notice
from app.core.paths import app_paths
from app.research.citations import support_headline
from app.research.engine import ResearchEngine
from app.store.research_runs import RunStore

QUESTION = "What is Milvus?"
SCRIPT = {
    "decompose": {"sub_queries": ["Milvus features"]},
    "judge": {"relevant": [1]},
    "reflect": {"done": True, "summary": "", "gap_queries": []},
    "citation_check": verdicts(),
}


def main(argv: list[str]) -> int:
    """Run one fathom subcommand (as app.cli does, without importing every other command)."""
    name, *rest = argv
    module = importlib.import_module(f"app.commands.{name}")
    parser = argparse.ArgumentParser(prog=f"fathom {name}")
    module.add_arguments(parser)
    return int(module.run(parser.parse_args(rest)))


async def record(run_id: str, script: dict) -> Finished | Failed:
    runs = RunStore.open(app_paths())
    model = ScriptedModel(script, text="Milvus is an open-source vector database [1].")
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs).run(QUESTION, run_id=run_id)
    )
    runs.close()
    return events[-1]


async def test_history_lists_runs_and_show_prints_the_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    finished = await record("20260101-000000-aaaaaa", SCRIPT)
    failed = await record(
        "20260101-000001-bbbbbb", {**SCRIPT, "judge": ModelUnavailable("The model went away.")}
    )
    assert isinstance(finished, Finished) and isinstance(failed, Failed)

    assert main(["history"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("RUN ID")
    assert "20260101-000001-bbbbbb" in lines[1] and "failed" in lines[1]  # newest first
    assert "20260101-000000-aaaaaa" in lines[2] and "finished" in lines[2] and QUESTION in lines[2]

    assert main(["show", "20260101-000000"]) == 0  # a unique prefix is enough
    out = capsys.readouterr().out
    assert out.startswith(f"# {QUESTION}")
    assert finished.report.markdown.strip() in out
    # the report's support header, above the report
    support = finished.report.support
    assert support is not None and support.sentences >= 1
    header = f"*{support_headline(support)}*"
    assert header in out.splitlines() and out.index(header) < out.index(
        finished.report.markdown.strip()
    )

    assert main(["show", "20260101-000001-bbbbbb"]) == 0
    assert "The run failed: The model went away." in capsys.readouterr().out
    assert main(["show", "last"]) == 0  # the latest run, without copying its id
    out = capsys.readouterr().out
    assert "run 20260101-000001-bbbbbb" in out and "The run failed" in out

    assert main(["show", "20260101-000000-aaaaaa", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["events"][0]["type"] == "RunStarted" and data["events"][-1]["type"] == "Finished"
    assert [e["chunk_id"] for e in data["evidence"]] == [
        e.chunk_id for e in finished.report.evidence
    ]

    assert main(["show", "nope"]) == 1
    assert "No research run 'nope'" in capsys.readouterr().err


def test_show_piped_into_a_reader_that_stops_early_ends_without_a_traceback() -> None:
    """`fathom show last | head -3`: head closes the pipe; before, Python's BrokenPipeError
    traceback followed the report's first lines."""
    asyncio.run(record("20260101-000000-aaaaaa", SCRIPT))
    show = subprocess.Popen(
        [sys.executable, "-m", "app", "show", "last"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert show.stdout is not None
    show.stdout.close()  # the reader is gone before the command writes its first line
    _out, err = show.communicate(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert show.returncode == 141


def test_history_when_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 0
    assert "No research runs yet" in capsys.readouterr().out
    assert main(["show", "last"]) == 1
    assert "No research run 'last'" in capsys.readouterr().err


async def test_history_writes_run_off_the_event_loop_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop_thread = threading.get_ident()
    writers: set[int] = set()
    real_append = RunStore.append_events

    def append(self: RunStore, run_id: str, events: Any) -> None:
        writers.add(threading.get_ident())
        real_append(self, run_id, events)

    monkeypatch.setattr(RunStore, "append_events", append)
    finished = await record("20260101-000002-cccccc", SCRIPT)
    assert isinstance(finished, Finished)
    assert writers and loop_thread not in writers
    # the run is complete in the history as soon as run() has returned
    runs = RunStore.open(app_paths())
    try:
        saved = runs.get_run("20260101-000002-cccccc")
        assert saved is not None and saved.status == "finished"
        assert runs.load_report("20260101-000002-cccccc") is not None
    finally:
        runs.close()


async def test_a_broken_history_never_breaks_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runs = RunStore(tmp_path / "catalog.db")
    runs.path = tmp_path  # the writer thread's own connection cannot open a directory
    model = ScriptedModel(SCRIPT, text="Milvus is an open-source vector database [1].")
    with caplog.at_level(logging.WARNING):
        events = await collect(
            ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs).run(QUESTION)
        )
    runs.close()
    assert isinstance(events[-1], Finished) and events[-1].report.evidence
    assert "could not save to the history" in caplog.text
    # the user is told, once, before the run's end
    warnings = [
        e for e in events if isinstance(e, Notice) and "cannot be saved to the history" in e.message
    ]
    assert len(warnings) == 1 and warnings[0].level == "warning"
