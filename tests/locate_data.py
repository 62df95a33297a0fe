"""Where the shared test data (``../shared/data``) is, for tests and benchmarks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """``$FATHOM_SHARED_DATA`` when set; else ``shared/data`` beside this checkout;
    else beside the repository it was cloned from (a clean clone made elsewhere,
    as CI makes one). The first candidate that exists, or the checkout's own."""
    own = REPO_ROOT.parent / "shared" / "data"
    candidates = [own]
    if os.environ.get("FATHOM_SHARED_DATA"):
        candidates.insert(0, Path(os.environ["FATHOM_SHARED_DATA"]))
    try:
        origin = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and "://" not in origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    return next((path for path in candidates if path.is_dir()), own)
