"""Table mode: duplicate entities merge, unsupported cells stay empty, exports round-trip."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from app.core.models import TableCell
from app.research.entity_table import (
    Mention,
    build_table,
    checked_cell,
    merge_mentions,
    normalise_name,
    table_to_csv,
    table_to_json,
    table_to_markdown,
    write_table,
)


def test_spellings_of_one_entity_share_a_key() -> None:
    assert normalise_name("The Milvus") == normalise_name("milvus") == normalise_name("Milvus's")
    assert normalise_name("Zürich") == normalise_name("zurich")
    assert normalise_name("Vector Databases") == normalise_name("vector database")
    assert normalise_name("Milvus Lite") != normalise_name("Milvus")


def test_mentions_merge_into_one_row_per_entity() -> None:
    merged = merge_mentions(
        [
            Mention("Milvus", "c1"),
            Mention("the Milvus", "c2"),
            Mention("Qdrant", "c2"),
            Mention("MILVUS", "c3"),
            Mention("Milvus", "c1"),
            Mention("  ", "c4"),
            Mention("unknown", "c4"),
        ]
    )
    assert [m.name for m in merged] == ["Milvus", "Qdrant"]
    assert merged[0].chunk_ids == ["c1", "c2", "c3"]


def test_a_value_in_its_evidence_is_kept_with_its_confidence() -> None:
    cell = checked_cell("Zilliz", 0.9, "c1", "Milvus was created by Zilliz in 2019.")
    assert cell == TableCell(value="Zilliz", confidence=0.9, chunk_id="c1")


def test_an_invented_value_leaves_the_cell_empty() -> None:
    assert (
        checked_cell("Oracle Corporation", 0.95, "c1", "Milvus was created by Zilliz.")
        == TableCell()
    )


def test_a_partly_supported_value_gets_low_confidence() -> None:
    cell = checked_cell("Zilliz Inc", 0.9, "c1", "Milvus was created by Zilliz.")
    assert cell.value == "Zilliz Inc"
    assert cell.confidence <= 0.3


def test_missing_values_and_missing_sources_give_empty_cells() -> None:
    assert checked_cell("unknown", 1.0, "c1", "unknown") == TableCell()
    assert checked_cell("N/A.", 1.0, "c1", "n/a") == TableCell()
    assert checked_cell("Zilliz", 1.0, "", "Zilliz") == TableCell()


def test_confidence_is_clamped_and_defaults_when_garbage() -> None:
    assert checked_cell("Zilliz", 7, "c1", "Zilliz").confidence == 1.0
    assert checked_cell("Zilliz", "high", "c1", "Zilliz").confidence == 0.5  # type: ignore[arg-type]
    assert checked_cell("Zilliz", float("nan"), "c1", "Zilliz").confidence == 0.5


def _table():  # type: ignore[no-untyped-def]
    return build_table(
        "database",
        ["maker", "year"],
        [
            ("Milvus", [TableCell("Zilliz", 0.9, "c1", "by Zilliz"), TableCell("2019", 0.2, "c1")]),
            ("Qdrant, Inc", [TableCell()]),  # short rows are padded
        ],
    )


def test_csv_export_has_value_confidence_and_source_per_column() -> None:
    rows = list(csv.reader(io.StringIO(table_to_csv(_table()))))
    assert rows[0] == [
        "database",
        "maker",
        "maker confidence",
        "maker source",
        "year",
        "year confidence",
        "year source",
    ]
    assert rows[1] == ["Milvus", "Zilliz", "0.90", "c1", "2019", "0.20", "c1"]
    assert rows[2] == ["Qdrant, Inc", "", "", "", "", "", ""]


def test_json_export_round_trips() -> None:
    data = json.loads(table_to_json(_table()))
    assert data["columns"] == ["maker", "year"]
    assert data["rows"][0]["cells"]["maker"] == {
        "value": "Zilliz",
        "confidence": 0.9,
        "chunk_id": "c1",
        "quote": "by Zilliz",
    }
    assert data["rows"][1]["cells"]["year"]["value"] == ""


def test_markdown_cites_cells_and_marks_low_confidence() -> None:
    md = table_to_markdown(_table(), {"c1": 4})
    assert "| Milvus | Zilliz [4] | 2019 (?) [4] |" in md


def test_write_table_by_suffix(tmp_path: Path) -> None:
    assert write_table(_table(), tmp_path / "t.csv").read_text().startswith("database,maker")
    assert (
        json.loads(write_table(_table(), tmp_path / "t.json").read_text())["entity_type"]
        == "database"
    )
    with pytest.raises(ValueError, match=r"use \.csv or \.json"):
        write_table(_table(), tmp_path / "t.xlsx")
