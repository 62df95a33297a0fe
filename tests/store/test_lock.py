"""A second Fathom process on the same data dir gets a sentence, not a stack trace.

Every test here spawns a real second Python process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.errors import StoreLocked
from app.core.paths import app_paths
from app.store.lock import LOCKED_MESSAGE, acquire_instance_lock
from app.store.vectors import VectorStore

REPO_ROOT = Path(__file__).resolve().parents[2]

HOLD = """
import sys
from app.core.paths import app_paths
from app.store.lock import acquire_instance_lock, holder_named
from app.store.vectors import VectorStore
if sys.argv[1] == "named":  # as `fathom ingest` names itself (app/cli.py)
    with holder_named("'fathom ingest' in a terminal"):
        held = acquire_instance_lock(app_paths())
else:
    held = acquire_instance_lock(app_paths()) if sys.argv[1] == "lock" else VectorStore(sys.argv[2])
print("ready", flush=True)
sys.stdin.read()  # hold until the test closes stdin or kills us
"""

TRY_OPEN = """
import sys
from app.core.errors import StoreLocked
from app.store.vectors import VectorStore
try:
    VectorStore(sys.argv[1])
except StoreLocked as exc:
    print(exc)
    sys.exit(3)
print("opened")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    return env


@pytest.fixture
def holder() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stdin:
            proc.stdin.close()
        if proc.stdout:
            proc.stdout.close()


def _hold(started: list[subprocess.Popen[str]], *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO_ROOT,
    )
    started.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"  # waits until the lock is really held
    return proc


def test_the_instance_lock_refuses_a_second_process_and_frees_on_death(
    holder: list[subprocess.Popen[str]],
) -> None:
    other = _hold(holder, "lock")
    with pytest.raises(StoreLocked) as caught:
        acquire_instance_lock(app_paths())
    assert caught.value.message == LOCKED_MESSAGE
    assert str(caught.value).startswith(
        "This library is already open by another Fathom window. Close"
    )

    other.send_signal(signal.SIGKILL)  # a crash, not a clean exit
    other.wait(timeout=30)
    with acquire_instance_lock(app_paths()) as lock:
        assert lock.held
        assert Path(lock.path).read_text().strip() == str(os.getpid())
    assert not lock.held


def test_a_library_held_by_a_terminal_command_says_so(holder: list[subprocess.Popen[str]]) -> None:
    """It said "another Fathom window" when a terminal ingest held it."""
    other = _hold(holder, "named")
    with pytest.raises(StoreLocked) as caught:
        acquire_instance_lock(app_paths())
    said = caught.value.message
    assert (
        said
        == f"This library is already open by 'fathom ingest' in a terminal (process {other.pid})."
    )


def test_the_instance_lock_is_taken_once_and_can_be_taken_again_after_close() -> None:
    first = acquire_instance_lock(app_paths())
    with pytest.raises(StoreLocked):
        acquire_instance_lock(app_paths())
    first.close()
    acquire_instance_lock(app_paths()).close()


def test_milvus_lite_held_by_another_process_is_store_locked(
    tmp_path: Path, holder: list[subprocess.Popen[str]]
) -> None:
    uri = str(tmp_path / "milvus.db")
    _hold(holder, "store", uri)
    with pytest.raises(StoreLocked) as caught:
        VectorStore(uri)
    assert caught.value.message == LOCKED_MESSAGE


def test_the_refused_process_says_one_sentence_and_no_traceback(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    with VectorStore(uri):
        refused = subprocess.run(
            [sys.executable, "-c", TRY_OPEN, uri],
            capture_output=True,
            text=True,
            env=_env(),
            cwd=REPO_ROOT,
            timeout=120,
        )
    assert refused.returncode == 3, refused.stderr
    assert refused.stdout.startswith(LOCKED_MESSAGE)
    assert "Traceback" not in refused.stderr and "DataDirLockedError" not in refused.stderr

    # once this process lets go, the other one can open it
    allowed = subprocess.run(
        [sys.executable, "-c", TRY_OPEN, uri],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert allowed.returncode == 0 and allowed.stdout.strip() == "opened", allowed.stderr
