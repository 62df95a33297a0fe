"""Write tests/store/data/lite3-library.tar.gz: a Fathom home whose search index was
written by Milvus Lite 3.x (the pure-Python engine Fathom used before the native one),
for the test that the native engine moves it over without re-embedding anything.

Run with an environment that has milvus-lite 3.x and pymilvus 3.x installed:

    python3 -m venv /tmp/lite3 && /tmp/lite3/bin/pip install -e . "pymilvus>=3" "milvus-lite>=3.2"
    /tmp/lite3/bin/python tests/store/make_lite3_library.py

The library: collection "harbour" with three notes, one of them changed and indexed
again (its old chunks deleted: delete records in the index) and one removed; and a second
collection "quay" with one note. Every chunk is flushed, as a closed Fathom leaves them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / "data" / "lite3-library.tar.gz"

NOTES = {
    "tides.md": "The harbour office keeps its tide tables in a green ledger.\n\nThe ledger moved in 1987.\n",
    "pilots.md": "Harbour pilots board incoming ships at the outer buoy.\n\nThey log each boarding by radio.\n",
    "cranes.md": "The north quay has four cranes.\n\nThe oldest crane was built in 1961.\n",
}
CHANGED = "The north quay has five cranes since the new gantry crane arrived in 2019.\n"


def main() -> None:
    if int(version("milvus-lite").split(".")[0]) < 3:
        raise SystemExit("This needs Milvus Lite 3.x installed (see the docstring).")
    work = Path(tempfile.mkdtemp(prefix="fathom-lite3-"))
    home, docs = work / "home", work / "docs"
    docs.mkdir()
    for name, text in NOTES.items():
        (docs / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "FATHOM_HOME": str(home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}

    def fathom(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "app", *args], env=env, check=True, cwd=REPO)

    fathom("ingest", str(docs), "--collection", "harbour", "--quiet")
    (docs / "cranes.md").write_text(CHANGED, encoding="utf-8")
    fathom(
        "ingest", str(docs), "--collection", "harbour", "--quiet"
    )  # cranes.md changed: indexed again
    fathom("remove", "--collection", "harbour", "--document", str(docs / "pilots.md"), "--yes")
    (docs / "quay.md").write_text(
        "Quay four is closed for repairs until spring.\n", encoding="utf-8"
    )
    fathom("ingest", str(docs / "quay.md"), "--collection", "quay", "--quiet")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(OUT, "w:gz") as tar:
        for path in sorted(home.rglob("*")):
            if path.is_file() and "models" not in path.relative_to(home).parts[:2]:
                tar.add(path, arcname=str(path.relative_to(home)))
    shutil.rmtree(work)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
