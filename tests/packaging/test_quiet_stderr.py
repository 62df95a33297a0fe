"""A normal ``fathom ingest`` and ``fathom search`` print only Fathom's own lines.

Milvus Lite runs a gRPC server inside the process, and gRPC's core logs through
absl straight to stderr ("WARNING: All log messages before absl::InitializeLog()…",
"I1202 … fork_posix.cc:71] Other threads are currently calling into gRPC…");
``app/cli.py`` sets ``GRPC_VERBOSITY`` before it loads. Run as a user runs them:
the installed ``fathom`` command, in subprocesses, on real documents (a PDF too, so
conversion worker processes start while the store is open).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fathom_process import run_fathom

# What a third-party logger writes that Fathom never does.
NOISE = re.compile(
    r"absl|grpc|All log messages before|fork_posix|^[IWEF]\d{4} \d\d:\d\d:\d\d|Traceback|Warning:|^WARNING|^ERROR",
    re.IGNORECASE,
)


def fathom(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_fathom(*args, env=env, cwd=cwd)


def test_ingest_and_search_write_only_fathoms_own_lines_to_stderr(
    tmp_path: Path, fathom_home: Path, shared_data: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(shared_data / "pdf" / "WhatisMilvus.pdf", docs)
    for markdown in sorted((shared_data / "milvus-docs").rglob("*.md"))[:2]:
        shutil.copy(markdown, docs)
    # A user's environment: nothing of the test run's quieting (no GRPC_*, no Python warnings filter).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GRPC_", "GLOG_", "PYTHONWARNINGS"))
    }
    env["FATHOM_HOME"] = str(fathom_home)

    ingest = fathom("ingest", "-c", "docs", str(docs), env=env, cwd=tmp_path)
    search = fathom("search", "-c", "docs", "What is Milvus?", env=env, cwd=tmp_path)

    for name, result in (("ingest", ingest), ("search", search)):
        report = f"fathom {name}: exit {result.returncode}\nstderr:\n{result.stderr}"
        assert result.returncode == 0, report
        assert [line for line in result.stderr.splitlines() if NOISE.search(line)] == [], report
    assert "Collection 'docs': 3 indexed" in ingest.stderr, ingest.stderr
    assert "WhatisMilvus.pdf" in search.stdout, search.stdout


@pytest.mark.parametrize(
    ("line", "noise"),
    [
        (
            "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
            True,
        ),
        (
            "I1202 14:56:45.520025   29099 fork_posix.cc:71] Other threads are currently calling into gRPC",
            True,
        ),
        (
            "E0000 00:00:1733150000.000000  123 init.cc:229] grpc_wait_for_shutdown_with_timeout() timed out.",
            True,
        ),
        ("Ingesting 3 files into 'docs'.", False),
        ("indexed   docs/WhatisMilvus.pdf (10 chunks)", False),
        (
            "Collection 'docs': 3 indexed (25 new chunks), 0 unchanged, 0 skipped, 0 failed, 0 removed, in 9.4s.",
            False,
        ),
    ],
)
def test_what_counts_as_noise(line: str, noise: bool) -> None:
    assert bool(NOISE.search(line)) is noise
