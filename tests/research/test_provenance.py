"""A report carries its provenance: a real quick run with the starter model over real
files, then the exported Markdown and `fathom show` say what the report was made from
and by, and that the starter wrote it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from model_files import file_sha256

from app import __version__
from app.core.events import Finished
from app.core.models import Budget
from app.core.paths import app_paths
from app.core.settings import Settings
from app.export.content import content_of
from app.export.markdown import PROVENANCE_HEADING, report_markdown
from app.ingest.library import Library
from app.llm.llamacpp import LlamaCppModel
from app.research.engine import ResearchEngine
from app.research.provenance import STARTER_HEADER
from app.store.research_runs import RunStore

REPO = Path(__file__).resolve().parents[2]
QUESTION = "What are the limits of Milvus?"
BUDGET = Budget(max_rounds=1, max_subqueries=1, top_k=3, max_seconds=300, max_concurrent_calls=1)


def python_in_repo(*args: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter running ``args`` in the repository (its output as text)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


@pytest.fixture
def files(shared_data: Path, tmp_path: Path) -> list[Path]:
    folder = tmp_path / "docs"
    folder.mkdir()
    copies = []
    for name in ("limitations.md", "overview.md"):
        copies.append(
            Path(shutil.copy(shared_data / "milvus-docs" / "about" / name, folder / name))
        )
    return copies


def test_a_report_says_what_it_was_made_from_and_by(
    files: list[Path], starter_llm: LlamaCppModel
) -> None:
    async def run() -> Finished:
        library = Library.open(Settings(), app_paths())
        runs = RunStore.open(app_paths())
        try:
            async for _ in library.ingest([files[0].parent], "docs"):
                pass
            events = [
                e
                async for e in ResearchEngine(starter_llm, library, runs).run(
                    QUESTION,
                    mode="quick",
                    budget=BUDGET,
                    options={"report_max_tokens": 120, "prompt_chars": 2000},
                )
            ]
        finally:
            runs.close()
            await library.aclose()
        assert isinstance(events[-1], Finished), events[-1]
        return events[-1]

    before = time.time()
    finished = asyncio.run(run())
    report = finished.report
    made = report.provenance
    assert made is not None
    assert made.question == QUESTION and made.mode == "quick" and made.budget == BUDGET
    assert before - 1 <= made.started_at <= time.time() and made.fathom_version == __version__
    assert made.starter and made.model == starter_llm.model_name
    assert made.model_file == str(starter_llm.model_path)
    assert made.model_digest == "sha256:" + file_sha256(starter_llm.model_path)
    assert made.embedding_model == "all-MiniLM-L6-v2" or "MiniLM" in made.embedding_model
    assert made.collections == ("docs",)
    assert made.checked_by == (report.support.checked_by if report.support else "") != ""
    # every source as it was indexed: the file, its size, its time, its content's hash
    assert [s.number for s in made.sources] == [e.number for e in report.evidence]
    on_disk = {str(f): f for f in files}
    for source in made.sources:
        f = on_disk[source.path]
        assert source.size == f.stat().st_size and source.mtime == pytest.approx(
            f.stat().st_mtime, abs=1
        )
        assert source.sha256 == file_sha256(f)

    # the export says it, and says the starter wrote the report
    markdown = report_markdown(content_of(QUESTION, report))
    assert f"*{STARTER_HEADER}*" in markdown.split("\n## Sources")[0]
    section = markdown.split(PROVENANCE_HEADING, 1)[1]
    assert f"Fathom: {__version__}" in section and "Mode: quick" in section
    assert f"sha256:{file_sha256(starter_llm.model_path)}" in section
    for f in files:
        if str(f) in {s.path for s in made.sources}:
            assert file_sha256(f) in section

    # so does `fathom show`, read back from the history
    shown = python_in_repo("-m", "app", "show", finished.run_id)
    assert shown.returncode == 0, shown.stderr
    assert STARTER_HEADER in shown.stdout and "## Provenance" in shown.stdout
    assert f"sha256:{file_sha256(starter_llm.model_path)}" in shown.stdout


def test_a_run_without_ollama_never_loads_its_back_end_to_record_the_digest() -> None:
    """The digest is asked of Ollama only for an Ollama model: recording a llama.cpp
    run's provenance must not import the Ollama client, which would hold the event
    loop (the window's) for a moment at the end of a first run. A fresh interpreter:
    another test may have loaded it here."""
    script = (
        "import asyncio, sys\n"
        "from app.research.provenance import ollama_digest\n"
        "class Model:\n"
        "    model_name = 'local.gguf'\n"
        "print(repr(asyncio.run(ollama_digest(Model()))))\n"
        "print('app.llm.ollama_backend' in sys.modules, 'ollama' in sys.modules)\n"
    )
    ran = python_in_repo("-c", script)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["''", "False False"]
