"""Research runs saved by Fathom before stored events had a schema version.

``fixtures/history_v0.sql.gz`` is a SQL dump of the research tables of a real
catalog: three runs made with `fathom ask` and the starter model over two
Milvus pages (a deep run, a table run, and a deep run stopped with Ctrl-C
after its first searches), by the code of commit 047d6a7. The tree, report
and evidence that code showed for each run are in
``fixtures/history_v0_expected.json``; today's code must show the same.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
DUMP = FIXTURES / "history_v0.sql.gz"
EXPECTED: dict[str, dict[str, Any]] = json.loads(
    (FIXTURES / "history_v0_expected.json").read_text(encoding="utf-8")
)
DEEP_RUN = "20261202-052349-b0142b"
TABLE_RUN = "20261202-052246-e1ae43"
STOPPED_RUN = "20261202-052408-ab65ec"


def restore(target: Path) -> Path:
    """Write the saved runs into the SQLite file ``target`` (a catalog file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(target)
    try:
        conn.executescript(gzip.decompress(DUMP.read_bytes()).decode("utf-8"))
    finally:
        conn.close()
    return target


def outline(tree: Any) -> list[list[Any]]:
    """(node id, kind, label, status, parent, notices) of every node, depth first."""
    return [
        [n.node_id, n.kind, n.label, n.status, n.parent_id, len(n.notices)] for n in tree.walk()
    ]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
