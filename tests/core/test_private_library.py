"""A library is its user's alone (issue 36): under the usual umask 022 a new library's
folders were 0755 and its files (every passage, every question and answer) 0644."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from fathom_process import run_fathom

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")

OTHERS = stat.S_IRWXG | stat.S_IRWXO


def _open_to_others(home: Path, *, except_under: Path | None = None) -> list[str]:
    found = []
    for root, dirs, files in os.walk(home / "data"):
        for name in [*dirs, *files]:
            path = Path(root, name)
            if except_under is not None and except_under in (path, *path.parents):
                continue
            if not path.is_symlink() and os.lstat(path).st_mode & OTHERS:
                found.append(f"{path.relative_to(home)} {oct(os.lstat(path).st_mode & 0o777)}")
    for folder in ("data", "config", "cache"):
        if os.stat(home / folder).st_mode & OTHERS:
            found.append(f"{folder} {oct(os.stat(home / folder).st_mode & 0o777)}")
    return found


def test_a_new_library_is_private_under_umask_022_and_an_old_one_is_tightened_once(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text(
        "# Notes\n\nThe wombat ledger is kept in the shed.\n", encoding="utf-8"
    )
    env = {**os.environ, "FATHOM_HOME": str(home)}

    done = run_fathom("ingest", str(docs), "--collection", "notes", env=env, umask=0o022)
    assert done.returncode == 0, done.stderr
    assert (home / "data" / "catalog.sqlite").exists() and (home / "data" / "milvus.db").exists()
    assert _open_to_others(home) == []
    assert "Made the library private" not in done.stderr  # new: private from the start

    # a library made before: opened to others as umask 022 left it, then opened again
    for root, dirs, files in os.walk(home / "data"):
        for name in dirs:
            os.chmod(Path(root, name), 0o755)
        for name in files:
            os.chmod(Path(root, name), 0o644)
    os.chmod(home / "data", 0o755)
    assert _open_to_others(home) != []
    first = run_fathom("ingest", str(docs), "--collection", "notes", env=env, umask=0o022)
    assert first.returncode == 0, first.stderr
    assert "Made the library private to you" in first.stderr
    assert _open_to_others(home) == []
    again = run_fathom("ingest", str(docs), "--collection", "notes", env=env, umask=0o022)
    assert "Made the library private" not in again.stderr  # said once
