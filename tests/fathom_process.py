"""Run ``fathom`` in a subprocess, as a user runs it, for the command-line tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the installed ``fathom`` script, next to this interpreter
INSTALLED = (str(Path(sys.executable).parent / "fathom"),)
# the command line's module run from the source tree (with ``PYTHONPATH`` set to REPO)
MODULE = (sys.executable, "-m", "app.cli")


def in_the_background(command: Sequence[str]) -> list[str]:
    """``command`` as a shell starts it in the background (``fathom … &`` in a script,
    ``nohup``): with Ctrl+C (SIGINT) ignored, which stays ignored across exec. ``sh`` sets
    it and execs the command (same pid), rather than a ``preexec_fn`` (see :func:`run_fathom`)."""
    return ["sh", "-c", 'trap "" INT && exec "$@"', "sh", *command]


def run_fathom(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    timeout: float = 600,
    program: Sequence[str] = INSTALLED,
    umask: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """``program`` (the installed script unless told) with ``args``, its output captured as
    text; ``env`` None: this process's environment; ``umask``: the child's, when given.
    A non-zero exit is returned, not raised.

    The umask is set by ``sh`` before it execs the program, not by a ``preexec_fn``: that
    would make Python fork the test process instead of spawning, and gRPC (loaded here by
    pymilvus) runs its fork handlers in the child, which now and then abort it (SIGABRT,
    "epoll_wait error: Bad file descriptor") before the program even starts."""
    command = [*program, *args]
    if umask is not None:
        command = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *command]
    return subprocess.run(
        command,
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
