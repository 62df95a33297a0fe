"""Document and collection state has one owner: only ``app/store/ledger.py`` changes
the catalog's documents and collections together with the vector store."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
OWNER = APP / "store" / "ledger.py"
# methods that change what a document or a collection holds, on the catalog or the store
STATE_WRITES = {
    "catalog": {
        "save_documents",
        "delete_documents",
        "create_collection",
        "delete_collection",
        "mark_collection_removing",
        "reset_collection",
        "set_embedding",
    },
    "store": {"insert", "delete_document", "delete_chunks", "drop_collection", "ensure_collection"},
}
# functions that write a store no library has open yet, and no catalog: moving a Milvus
# Lite 3.x index into a new native file before the library opens it (app/store/engine_move.py)
NOT_LIBRARY_STATE = {("app/store/vectors.py", "_move_from_lite3")}


def _state_writes(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and (str(path.relative_to(APP.parent)), node.name) in NOT_LIBRARY_STATE
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = ast.unparse(node.func.value)
            for kind, methods in STATE_WRITES.items():
                if receiver.endswith(kind) and node.func.attr in methods:
                    found.append(
                        f"{path.relative_to(APP.parent)}:{node.lineno} {receiver}.{node.func.attr}"
                    )
    return found


def test_only_the_ledger_writes_document_and_collection_state() -> None:
    writers = [
        hit for path in sorted(APP.rglob("*.py")) if path != OWNER for hit in _state_writes(path)
    ]
    assert writers == []


def test_the_check_sees_writes_when_they_are_there() -> None:
    # the ledger itself is full of them: the scan is not blind
    assert len(_state_writes(OWNER)) >= 10
