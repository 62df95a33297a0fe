"""`fathom ask --follow-up RUN_ID QUESTION` for real, as a user runs it: the
`fathom` program in a subprocess, the starter model chosen by the default
settings, over a real library of MuSiQue paragraphs (tests/musique_thread.py)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path

import pytest
from fathom_process import MODULE, REPO, run_fathom
from musique_thread import FIRST, FOLLOW_UP, write_paragraphs

from app.core.paths import app_paths
from app.core.settings import Settings, replace_setting, save_settings
from app.ingest.library import Library
from app.research.citations import SOURCES_HEADING

pytestmark = pytest.mark.slow

# the support header of a report checked independently (the starter is not asked to vote)
HEADER = re.compile(
    r"^\*\d+ of \d+ sentences? supported, \d+ flagged(, \d+ cites? no source)? "
    r"\(checked by word and meaning overlap\)\*$"
)


def fathom(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # FATHOM_HOME: this test's (tests/conftest.py)
    return run_fathom(*args, env=env, cwd=REPO, program=MODULE)


def test_ask_a_follow_up_from_the_command_line(shared_data: Path, tmp_path: Path) -> None:
    settings = replace_setting(
        Settings(), "model.llamacpp.n_threads", 1
    )  # a busy shared CPU: one thread
    save_settings(
        replace_setting(settings, "model.llamacpp.n_ctx", 4096), app_paths().settings_file
    )
    files = write_paragraphs(shared_data, tmp_path / "paragraphs")

    async def ingest() -> None:
        library = Library.open(Settings(), app_paths())
        try:
            async for _event in library.ingest(files, "music"):
                pass
        finally:
            await library.aclose()

    asyncio.run(ingest())

    # an unknown run: a sentence, a non-zero exit, before any model loads
    wrong = fathom("ask", "--follow-up", "nope", FOLLOW_UP)
    assert wrong.returncode == 2 and "No research run 'nope' to follow up" in wrong.stderr, (
        wrong.stderr
    )
    assert "Using the starter model" not in wrong.stderr

    first = fathom("ask", FIRST, "--mode", "quick", "--collection", "music", "--max-seconds", "300")
    assert first.returncode == 0, first.stderr
    assert HEADER.match(first.stdout.splitlines()[0]), first.stdout[
        :200
    ]  # the support header, then the report
    (first_id,) = re.findall(r"Run id: (\S+)", first.stderr)

    second = fathom(
        "ask", "--follow-up", first_id[:15], FOLLOW_UP, "--mode", "quick", "--max-seconds", "300"
    )
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0] == f"## Follow-up: {FOLLOW_UP}" and HEADER.match(lines[2]), second.stdout[:300]
    assert SOURCES_HEADING in second.stdout
    (second_id,) = re.findall(r"Run id: (\S+)", second.stderr)
    assert "over music:" in second.stderr  # the followed run's collections, unless told otherwise

    listed = fathom("history")
    assert listed.returncode == 0
    rows = [line for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert (
        len(rows) == 1
        and rows[0].startswith(second_id)
        and rows[0].endswith(f"{FIRST} (+1 follow-up)")
    )

    for run_id in (first_id, second_id):  # either run shows the whole thread
        shown = fathom("show", run_id)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"# {FIRST}")
        assert (
            f"## Follow-up: {FOLLOW_UP}" in shown.stdout
            and shown.stdout.count(SOURCES_HEADING) == 1
        )

    for run_id in (
        first_id,
        second_id,
    ):  # either run exports the whole thread, as the window shows it
        exported = fathom("export", run_id, "--format", "md", "-o", "-")
        assert exported.returncode == 0, exported.stderr
        assert "Follow-up:" in exported.stdout and exported.stdout.count(SOURCES_HEADING) == 1, (
            exported.stdout[:400]
        )
