"""`fathom collections`, `history`, `show`, `export` and `search` work while a
Fathom window has the library open: they read the catalog and the history
read-only, without the data dir's lock, and search through the window's Milvus
Lite server. A real second process opens the library the way the window does
(``Library.open``: the instance lock and Milvus Lite) and holds it while the
real commands run as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from history_fixture import DEEP_RUN, TABLE_RUN, restore

from app.cli import main
from app.core.paths import app_paths
from app.store.lock import LOCKED_MESSAGE

REPO_ROOT = Path(__file__).resolve().parents[2]

HOLD_LIKE_THE_WINDOW = """
import asyncio
import sys
from app.core.paths import app_paths
from app.core.settings import load_settings
from app.ingest.library import Library
paths = app_paths().ensure()
settings, _ = load_settings(paths.settings_file)
library = Library.open(settings, paths)  # what app/ui/services.py does when the window opens
print("ready", flush=True)
sys.stdin.read()  # hold until the test closes stdin
asyncio.run(library.aclose())  # as the window does when it closes
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    return env


def fathom(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *argv],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO_ROOT,
        timeout=180,
    )


@pytest.fixture
def window_holding_the_library() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LIKE_THE_WINDOW],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO_ROOT,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert (
            proc.stdout.readline().strip() == "ready"
        )  # the library is open: lock and Milvus Lite held
        yield proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
        proc.stdout.close()


def sea_docs(tmp_path: Path) -> Path:
    """A folder of two small documents on sea life."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kelp.txt").write_text(
        "Kelp forests grow up to half a metre a day.\n", encoding="utf-8"
    )
    (docs / "otters.md").write_text(
        "# Otters\n\nSea otters keep urchins in check.\n", encoding="utf-8"
    )
    return docs


def test_collections_history_and_show_work_while_the_window_holds_the_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    docs = sea_docs(tmp_path)
    restore(app_paths().catalog_file)  # three real saved runs (tests/fixtures/history_v0.sql.gz)
    assert main(["ingest", str(docs), "--collection", "ocean", "--description", "Sea life"]) == 0
    capsys.readouterr()

    request.getfixturevalue("window_holding_the_library")
    refused = fathom("ingest", str(docs), "--collection", "ocean")  # the library really is held
    assert refused.returncode == 2 and LOCKED_MESSAGE in refused.stderr

    listed = fathom("collections", "--json")
    assert listed.returncode == 0, listed.stderr
    (ocean,) = json.loads(listed.stdout)
    assert (ocean["name"], ocean["documents"], ocean["description"]) == ("ocean", 2, "Sea life")
    assert ocean["chunks"] >= 2
    table = fathom("collections")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[1].split()[:2] == ["ocean", "2"]

    history = fathom("history")
    assert history.returncode == 0, history.stderr
    assert history.stdout.startswith("RUN ID")
    assert TABLE_RUN in history.stdout and DEEP_RUN in history.stdout

    shown = fathom("show", TABLE_RUN)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# ") and f"run {TABLE_RUN}" in shown.stdout
    assert "Traceback" not in shown.stderr + history.stderr + listed.stderr

    missing = fathom("show", "no-such-run")
    assert missing.returncode == 1 and "No research run 'no-such-run'" in missing.stderr

    exported = fathom("export", DEEP_RUN, "--format", "md", "-o", "-")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("# ") and "## Sources" in exported.stdout
    table_file = tmp_path / "table.csv"
    exported = fathom("export", TABLE_RUN, "-o", str(table_file))
    assert exported.returncode == 0, exported.stderr
    assert len(table_file.read_text(encoding="utf-8").splitlines()) >= 2  # a header and rows


def test_read_only_commands_on_a_fresh_data_dir_write_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths = app_paths()
    assert main(["collections"]) == 0
    assert "No collections yet" in capsys.readouterr().err
    assert main(["history"]) == 0
    assert "No research runs yet" in capsys.readouterr().out
    assert main(["show", "20260101"]) == 1
    assert main(["export", "20260101", "-o", "-"]) == 1
    assert "No research run '20260101'" in capsys.readouterr().err
    assert not paths.catalog_file.exists()  # reading created no catalog


def test_search_reads_through_the_windows_server_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    docs = sea_docs(tmp_path)
    assert main(["ingest", str(docs), "--collection", "ocean"]) == 0
    capsys.readouterr()
    alone = fathom(
        "search", "sea otters urchins", "--collection", "ocean", "--json"
    )  # nobody holds it
    assert alone.returncode == 0, alone.stderr

    proc = request.getfixturevalue("window_holding_the_library")
    catalog = app_paths().catalog_file
    before = catalog.stat().st_mtime_ns, catalog.stat().st_size
    address = app_paths().data_dir / "milvus-reader.json"
    assert json.loads(address.read_text(encoding="utf-8"))["pid"] == proc.pid
    assert (
        oct(address.stat().st_mode & 0o777) == "0o600"
    )  # only the user reads where the index is served
    found = fathom("search", "sea otters urchins", "--collection", "ocean", "--json")
    assert found.returncode == 0, found.stderr
    hits, hits_alone = json.loads(found.stdout), json.loads(alone.stdout)
    assert [h["text"] for h in hits] == [
        h["text"] for h in hits_alone
    ]  # ranked as when searched alone
    assert "otters" in hits[0]["text"]
    several = fathom(
        "search", "kelp forests", "sea otters", "--json"
    )  # several queries, every collection
    assert several.returncode == 0, several.stderr
    assert ["Kelp" in q["hits"][0]["text"] for q in json.loads(several.stdout)] == [True, False]
    assert (catalog.stat().st_mtime_ns, catalog.stat().st_size) == before  # nothing written

    assert proc.stdin is not None
    proc.stdin.close()  # the window closes: its address goes with it
    proc.wait(timeout=120)
    assert not address.exists()
    after = fathom("search", "kelp", "--collection", "ocean", "--json")
    assert after.returncode == 0, after.stderr
