"""``fathom --self-test`` says which step failed and exits non-zero.

(The passing run, frozen and from the installed .deb, is in test_frozen.py.)
"""

from __future__ import annotations

import argparse
import email
import email.policy
import os
import tempfile
from pathlib import Path

import pytest

from app.commands import selftest


def test_missing_sample_fails_the_ingest_step_and_leaves_nothing_behind(
    tmp_path: Path,
    fathom_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    empty = tmp_path / "no-sample"
    empty.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(selftest, "sample_dir", lambda: empty)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    status = selftest.run(argparse.Namespace())

    lines = capsys.readouterr().out.splitlines()
    assert status == 1
    assert len(lines) == 1 and lines[0].startswith(
        "FAIL ingest: the bundled sample documents are missing"
    ), lines
    assert str(empty / selftest.SAMPLE_FILES[0]) in lines[0]
    # The user's data dir was never used, and the temporary one is gone.
    assert os.environ["FATHOM_HOME"] == str(fathom_home)
    assert list(fathom_home.iterdir()) == []
    assert list(scratch.iterdir()) == []


def test_the_sample_states_the_facts_the_self_test_searches_for() -> None:
    folder = selftest.sample_dir()
    markdown = (folder / "veltmoor-lighthouse.md").read_text(encoding="utf-8")
    assert (folder / "veltmoor-keepers-log.pdf").read_bytes().startswith(b"%PDF")
    for probe in selftest.PROBES:
        assert probe.source in selftest.SAMPLE_FILES
    assert selftest.PROBES[0].expected in markdown
    raw = (folder / "veltmoor-harbour-letter.eml").read_bytes()
    letter = email.message_from_bytes(raw, policy=email.policy.default)
    assert (
        str(letter["From"]).startswith("Harbour Master")
        and selftest.PROBES[2].expected in letter.get_content()
    )
