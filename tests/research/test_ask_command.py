"""`fathom ask` for real: the starter model chosen by the default settings, over a
real library in FATHOM_HOME; progress on stderr, the run on stdout."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from app.commands import ask
from app.core.events import IngestFinished
from app.core.paths import app_paths
from app.core.settings import Settings, replace_setting, save_settings
from app.ingest.library import Library
from app.store.research_runs import RunStore

pytestmark = pytest.mark.slow


def run_ask(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fathom ask")
    ask.add_arguments(parser)
    return ask.run(parser.parse_args(argv))


def ingest(path: Path, collection: str) -> None:
    async def go() -> list[Any]:
        library = Library.open(Settings(), app_paths())
        try:
            return [event async for event in library.ingest([path], collection)]
        finally:
            await library.aclose()

    events = asyncio.run(go())
    assert isinstance(events[-1], IngestFinished) and events[-1].indexed == 1, events[-1]


def test_ask_refuses_an_empty_library_and_an_unknown_collection(
    capsys: pytest.CaptureFixture[str], shared_data: Path
) -> None:
    assert run_ask(["What is Milvus?"]) == 2
    assert "The library is empty" in capsys.readouterr().err
    ingest(shared_data / "milvus-docs" / "about" / "limitations.md", "docs")
    assert run_ask(["What is Milvus?", "--collection", "nope"]) == 2
    err = capsys.readouterr().err
    assert "There is no collection named 'nope' (collections: docs)." in err
    # the options before the question, as people type them; one name a flag
    assert run_ask(["-c", "docs", "--collection", "gone", "What is Milvus?"]) == 2
    err = capsys.readouterr().err
    assert "There is no collection named 'gone' (collections: docs)." in err


def test_ask_prints_a_cited_report_and_the_run_as_json(
    capsys: pytest.CaptureFixture[str], shared_data: Path
) -> None:
    # one llama.cpp thread: on a busy shared CPU, more threads only spin
    settings = replace_setting(Settings(), "model.llamacpp.n_threads", 1)
    save_settings(
        replace_setting(settings, "model.llamacpp.n_ctx", 4096), app_paths().settings_file
    )
    ingest(shared_data / "pdf" / "WhatisMilvus.pdf", "milvus")
    code = run_ask(
        [
            "What is Milvus?",
            "--mode",
            "quick",
            "--collection",
            "milvus",
            "--json",
            "--max-seconds",
            "300",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Using the starter model" in captured.err  # the starter-model notice
    assert "Researching (quick" in captured.err and "chunks for: What is Milvus?" in captured.err
    assert "Done in" in captured.err and "tokens" in captured.err
    # what the run is doing, a line as each phase starts (the window's status line, without counts)
    said = [line for line in captured.err.splitlines() if line.startswith("… ")]
    assert said[:3] == [
        "… Searching the library for the question",
        "… Noting what each source says",  # picking the passages the answer rests on
        "… Writing the report",
    ], said
    assert len(said) == len(
        set(said)
    )  # once each: its keep-alive and count updates are not printed
    run = json.loads(captured.out)
    assert run["status"] == "finished" and run["mode"] == "quick"
    assert run["events"][0]["type"] == "RunStarted" and run["events"][-1]["type"] == "Finished"
    report = run["report"]
    numbers = {e["number"] for e in report["evidence"]}
    assert numbers and {c["number"] for c in report["citations"]} <= numbers
    assert all(e["path"].endswith("WhatisMilvus.pdf") for e in report["evidence"])
    assert "## Sources" in report["markdown"]
    # the run is in the history
    from app.commands import history

    parser = argparse.ArgumentParser()
    history.add_arguments(parser)
    assert history.run(parser.parse_args([])) == 0
    assert run["run_id"] in capsys.readouterr().out


def test_ask_refuses_an_empty_question_before_anything_runs(
    capsys: pytest.CaptureFixture[str], shared_data: Path
) -> None:
    ingest(shared_data / "milvus-docs" / "about" / "limitations.md", "docs")
    assert run_ask([" \n "]) == 2
    err = capsys.readouterr().err
    assert "The question is empty: type what you want to find out." in err
    assert "Researching" not in err  # no model loaded, no run started
    store = RunStore.open_read_only(app_paths())
    assert store is None or store.list_runs() == []  # and none saved to History


def test_ask_refuses_a_table_file_it_cannot_write_before_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        run_ask(["Which vector databases exist?", "--mode", "table", "--table-out", "out.xlsx"])
        == 2
    )
    assert "use a .csv or .json file name" in capsys.readouterr().err
