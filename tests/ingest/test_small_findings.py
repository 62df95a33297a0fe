"""The red team's smaller findings (issue 36, point 7), each as the user met it."""

from __future__ import annotations

import os
from pathlib import Path

from fathom_process import run_fathom

from app.ingest.skip_reasons import skipped_phrase


def test_docling_s_markdown_warning_does_not_reach_the_terminal(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "form.md").write_text("# Form\n\nName: ______________________\n\nSigned: ____________\n")
    env = {**os.environ, "FATHOM_HOME": str(tmp_path / "home")}
    done = run_fathom("ingest", str(docs), "--collection", "forms", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 indexed" in done.stderr
    assert "Warning" not in done.stderr and "potentially incorrect Markdown" not in done.stderr, done.stderr


def test_link_loops_and_links_outside_are_not_counted_as_broken_links() -> None:
    reasons = [
        "A symbolic link loop: this folder was already scanned.",
        "A symbolic link loop: the link points back to itself.",
        "A broken symbolic link: its target does not exist.",
        "A symbolic link that points outside the folder being indexed; not followed (turn on …).",
    ]
    assert skipped_phrase(4, reasons) == "4 skipped (2 a link loop, 1 a broken link, 1 a link outside the folder)"
