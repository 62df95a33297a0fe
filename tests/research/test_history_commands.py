"""`fathom history` and `fathom show` over runs the engine recorded."""

from __future__ import annotations

import argparse
import importlib
import json

import pytest
from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, verdicts

from app.core.errors import ModelUnavailable
from app.core.events import Failed, Finished
from app.core.paths import app_paths
from app.research.engine import ResearchEngine
from app.store.runs import RunStore

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
    events = await collect(ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS)), runs).run(QUESTION, run_id=run_id))
    runs.close()
    return events[-1]


async def test_history_lists_runs_and_show_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    finished = await record("20260101-000000-aaaaaa", SCRIPT)
    failed = await record("20260101-000001-bbbbbb", {**SCRIPT, "judge": ModelUnavailable("The model went away.")})
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

    assert main(["show", "20260101-000001-bbbbbb"]) == 0
    assert "The run failed: The model went away." in capsys.readouterr().out

    assert main(["show", "20260101-000000-aaaaaa", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["events"][0]["type"] == "RunStarted" and data["events"][-1]["type"] == "Finished"
    assert [e["chunk_id"] for e in data["evidence"]] == [e.chunk_id for e in finished.report.evidence]

    assert main(["show", "nope"]) == 1
    assert "No research run 'nope'" in capsys.readouterr().err


def test_history_when_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 0
    assert "No research runs yet" in capsys.readouterr().out
