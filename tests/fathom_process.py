"""Run ``fathom`` in a subprocess, as a user runs it, for the command-line tests."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the installed ``fathom`` script, next to this interpreter
INSTALLED = (str(Path(sys.executable).parent / "fathom"),)
# the command line's module run from the source tree (with ``PYTHONPATH`` set to REPO)
MODULE = (sys.executable, "-m", "app.cli")


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
    A non-zero exit is returned, not raised."""
    return subprocess.run(
        [*program, *args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=None if umask is None else functools.partial(os.umask, umask),
    )
