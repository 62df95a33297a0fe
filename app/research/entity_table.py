"""Entity tables (table mode): merging duplicate entities, checking cells
against their evidence, keeping the model's summary of a table free of what it
echoed (:func:`tidy_table_report`), and exporting CSV and JSON.

Used by the table mode, the CLI (``fathom ask --mode table``) and the window's
export action. No I/O here except :func:`write_table`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.models import EntityTable, Report, TableCell
from app.research import citations as cit

EMPTY_VALUES = frozenset(
    {"", "unknown", "n/a", "na", "none", "null", "not mentioned", "not specified", "-", "?"}
)
LOW_CONFIDENCE = 0.3  # cells at or below this are shown highlighted
_ARTICLES = ("the ", "a ", "an ")


@dataclass(frozen=True)
class Mention:
    """An entity named in a chunk, and the chunk's own words about it."""

    name: str
    chunk_id: str
    quote: str = ""


@dataclass
class MergedEntity:
    """One row of the table: every mention of the same entity."""

    key: str
    names: list[str] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The most frequent spelling; ties go to one without a leading article, then the first seen."""

        def rank(item: tuple[int, str]) -> tuple[int, bool, int]:
            index, name = item
            bare = not name.casefold().startswith(_ARTICLES)
            return self.names.count(name), bare, -index

        return max(enumerate(self.names), key=rank)[1]

    @property
    def chunk_ids(self) -> list[str]:
        return list(dict.fromkeys(m.chunk_id for m in self.mentions))


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.casefold()


def normalise_name(name: str) -> str:
    """A key under which spellings of one entity meet: case, accents, articles,
    punctuation, possessives and a plural ``s`` do not matter."""
    text = _fold(name).replace("’", "'")
    text = re.sub(r"'s\b", "", text)
    text = " ".join(re.sub(r"[^\w\s]", " ", text).split())
    for article in _ARTICLES:
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article) :]
    words = [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in text.split()
    ]
    return " ".join(words)


def plan_columns(
    entity_type: str, columns: Iterable[str], reserved: Iterable[str] = ()
) -> list[str]:
    """The planned columns a table can use: none that names the entity type (the first
    column does), none that echoes a field of the plan's own schema (a small model
    answers ``"columns": ["columns"]``), none twice."""
    taken = {normalise_name(entity_type)} | {normalise_name(r.replace("_", " ")) for r in reserved}
    kept = []
    for column in columns:
        key = normalise_name(column.replace("_", " "))
        if key and key not in taken:
            taken.add(key)
            kept.append(column)
    return kept


def merge_mentions(mentions: Iterable[Mention]) -> list[MergedEntity]:
    """Group mentions by normalised name, in order of first appearance."""
    merged: dict[str, MergedEntity] = {}
    for mention in mentions:
        name = " ".join(mention.name.split()).strip(" .,:;\"'")
        key = normalise_name(name)
        if not key or key in EMPTY_VALUES:
            continue
        entity = merged.setdefault(key, MergedEntity(key=key))
        entity.names.append(name)
        entity.mentions.append(mention)
    return list(merged.values())


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", _fold(text))


def support_ratio(value: str, evidence: str) -> float:
    """Share of the value's words that occur in the evidence text (0–1)."""
    words = _tokens(value)
    if not words:
        return 0.0
    folded = _fold(evidence)
    if " ".join(words) in " ".join(_tokens(folded)):
        return 1.0
    have = set(_tokens(folded))
    return sum(1 for w in words if w in have) / len(words)


def checked_cell(
    value: str, confidence: float, chunk_id: str, evidence: str, quote: str = ""
) -> TableCell:
    """A cell, honest about its support: empty when the value is missing or not in
    its evidence at all, low confidence when only partly there."""
    value = " ".join(str(value).split()).strip()
    if _fold(value).strip(" .") in EMPTY_VALUES or not chunk_id:
        return TableCell()
    ratio = support_ratio(value, evidence)
    if ratio < 0.5:
        return TableCell()
    try:
        conf = float(confidence)
    except (TypeError, ValueError):
        conf = 0.5
    conf = min(max(conf if conf == conf else 0.5, 0.0), 1.0)
    if ratio < 1.0:
        conf = min(conf, LOW_CONFIDENCE)
    return TableCell(value=value, confidence=round(conf, 2), chunk_id=chunk_id, quote=quote)


def build_table(
    entity_type: str, columns: Sequence[str], rows: Iterable[tuple[str, Sequence[TableCell]]]
) -> EntityTable:
    cols = tuple(columns)
    fixed = []
    for name, cells in rows:
        padded = (tuple(cells) + (TableCell(),) * len(cols))[: len(cols)]
        fixed.append((name, padded))
    return EntityTable(entity_type=entity_type, columns=cols, rows=tuple(fixed))


# -- the report under the table ----------------------------------------------------

_TAG_LINE = re.compile(r"</?\s*[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+")
MIN_ECHO_WORDS = 4  # a sentence of the prompt this long, repeated in the summary, is an echo


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", _fold(text)))


def _echoes(sentence: str, said: Sequence[str]) -> bool:
    words = _words(re.sub(r"\[\d+(?:\s*[,;]\s*\d+)*\]", " ", sentence))
    if not words:
        return False
    return any(
        line in words or (len(words.split()) >= MIN_ECHO_WORDS and words in line) for line in said
    )


def tidy_summary(text: str, instructions: Sequence[str]) -> str:
    """The model's summary of a table without what it echoed: Markdown table rows (the
    table is in the report once, above it), prompt tags and code fences, and every
    sentence that repeats one of ``instructions`` (the prompt's own words)."""
    said = [
        w
        for instruction in instructions
        for part in re.split(r"\n+|(?<=[.!?:])\s+", instruction)
        if len((w := _words(part)).split()) >= MIN_ECHO_WORDS
    ]
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("|", "```", "~~~")):
            continue
        stripped = _TAG_LINE.sub("", stripped).strip()
        kept = [s for s in _SENTENCE_END.split(stripped) if s.strip() and not _echoes(s, said)]
        if kept or not stripped:
            lines.append(" ".join(kept))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def tidy_table_report(report: Report, preface_lines: int, instructions: Sequence[str]) -> Report:
    """``report`` with its summary (what follows the table, its first ``preface_lines``
    lines) tidied by :func:`tidy_summary`; its sentence counts follow."""
    body, tail = cit.split_report(report.markdown)
    lines = body.rstrip().splitlines()
    head, summary = lines[:preface_lines], "\n".join(lines[preface_lines:])
    tidied = tidy_summary(summary, instructions)
    if tidied == summary.strip():
        return report
    text = (
        "\n".join(head).rstrip() + "\n\n" + (tidied or "The model wrote no summary of the table.")
    )
    markdown = text + "\n\n" + tail if tail else text + "\n"
    return dataclasses.replace(
        report, markdown=markdown, support=cit.sentence_support(markdown, report.citations)
    )


# -- export -------------------------------------------------------------------


def table_to_rows(table: EntityTable) -> list[list[str]]:
    """Header plus one list per entity: value, confidence and chunk per column."""
    header = [table.entity_type or "entity"]
    for column in table.columns:
        header += [column, f"{column} confidence", f"{column} source"]
    rows = [header]
    for name, cells in table.rows:
        row = [name]
        for cell in cells:
            row += [cell.value, f"{cell.confidence:.2f}" if cell.value else "", cell.chunk_id]
        rows.append(row)
    return rows


def table_to_csv(table: EntityTable) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table_to_rows(table))
    return buffer.getvalue()


def table_to_dict(table: EntityTable) -> dict[str, object]:
    return {
        "entity_type": table.entity_type,
        "columns": list(table.columns),
        "rows": [
            {
                "entity": name,
                "cells": {
                    column: {
                        "value": cell.value,
                        "confidence": cell.confidence,
                        "chunk_id": cell.chunk_id,
                        "quote": cell.quote,
                    }
                    for column, cell in zip(table.columns, cells, strict=False)
                },
            }
            for name, cells in table.rows
        ],
    }


def table_to_json(table: EntityTable) -> str:
    return json.dumps(table_to_dict(table), ensure_ascii=False, indent=2)


def table_to_markdown(table: EntityTable, numbers: dict[str, int] | None = None) -> str:
    """A Markdown table for the report; a cell cites its chunk as ``[n]`` when numbered,
    and a low-confidence value is marked with ``(?)``."""
    numbers = numbers or {}

    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join([esc(table.entity_type or "entity"), *map(esc, table.columns)]) + " |",
        "|" + "---|" * (len(table.columns) + 1),
    ]
    for name, cells in table.rows:
        shown = []
        for cell in cells:
            if not cell.value:
                shown.append("")
                continue
            text = esc(cell.value)
            if cell.confidence <= LOW_CONFIDENCE:
                text += " (?)"
            if cell.chunk_id in numbers:
                text += f" [{numbers[cell.chunk_id]}]"
            shown.append(text)
        lines.append("| " + " | ".join([esc(name), *shown]) + " |")
    return "\n".join(lines)


def write_table(table: EntityTable, path: Path) -> Path:
    """Write ``.csv`` or ``.json`` (by the file's suffix); returns the path."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        path.write_text(table_to_csv(table), encoding="utf-8", newline="")
    elif suffix == ".json":
        path.write_text(table_to_json(table), encoding="utf-8")
    else:
        raise ValueError(
            f"cannot export a table as {suffix or 'a file without a suffix'}: use .csv or .json"
        )
    return path
