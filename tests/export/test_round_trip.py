"""A run exported in every format and read back with a parser of that format: every
``[n]`` of the report resolves to exactly one source, no source is listed twice, the
passages (fences, quotes, raw HTML, citations, pipes, headings, entities, 10 KB of
text) come back as they were, and what follows the tenth source is intact.

Two runs: one recorded by ``fathom ask`` with the real starter model over real
documents, and one with 12 cited sources whose passages (real Milvus paragraphs,
extended) hold everything that has broken exports before.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hostile_run import OPEN_QUESTION, QUESTION, home_paths, record_hostile_run
from read_back import ReadBack, flat, read_html, read_markdown, read_pdf, squeezed

from app.core.models import Evidence
from app.export.content import ReportContent
from app.export.exporter import export
from app.export.stored import stored_content
from app.research.citations import first_cited, split_report
from app.store.research_runs import RunStore
from app.ui.exporters import render_pdf

FORMATS = ("md", "html", "pdf")


def _write(content: ReportContent, path: Path, include_consulted: bool = False) -> ReadBack:
    export(content, path, include_consulted=include_consulted, pdf=render_pdf)
    if path.suffix == ".md":
        return read_markdown(path.read_text(encoding="utf-8"))
    if path.suffix == ".html":
        return read_html(path.read_text(encoding="utf-8"))
    return read_pdf(path)


def _cited(body: str) -> list[int]:
    return [
        int(n)
        for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", body)
        for n in re.split(r"\s*,\s*", group)
    ]


def _check_structure(back: ReadBack, cited: list[int]) -> None:
    """One Sources heading; its entries are the cited sources, once each, in citation order;
    every [n] of the body resolves to exactly one of them."""
    assert back.headings.count("Sources") == 1, back.headings
    numbers = [n for n, _text in back.sources()]
    assert numbers == cited
    for n in _cited(back.body):
        assert numbers.count(n) == 1, f"[{n}] resolves to {numbers.count(n)} sources"


def _entry_holds(entry: str, e: Evidence, fmt: str) -> bool:
    """The entry names the source's title and path and quotes its whole passage, as written."""
    where = e.path + (f", page {e.page}" if e.page is not None else "")
    if fmt == "pdf":  # line wrapping adds and drops spaces
        return all(squeezed(part) in squeezed(entry) for part in (e.title, where, e.quote))
    return all(flat(part) in entry for part in (e.title, where, e.quote))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_with_hostile_passages_round_trips(
    qapp: Any, tmp_path: Path, shared_data: Path, fmt: str
) -> None:
    store = RunStore(home_paths(tmp_path / "home").catalog_file)
    try:
        run_id, evidence = record_hostile_run(store, shared_data)
        content = stored_content(store, run_id)
    finally:
        store.close()
    by_number = {e.number: e for e in evidence}
    assert len(evidence[9].quote) > 10_000  # the tenth source's passage is 10 KB

    back = _write(content, tmp_path / f"report.{fmt}")
    _check_structure(back, list(range(1, 13)))
    assert set(_cited(back.body)) == set(range(1, 13))
    for n, entry in back.sources():
        assert _entry_holds(entry, by_number[n], fmt), f"source [{n}] is not intact: {entry[:300]}"
    assert "Also consulted" not in back.headings
    assert flat(OPEN_QUESTION) in flat(back.after["Open questions"])
    if fmt != "pdf":  # the question is the title; the model's "## Sources" is text in its body
        assert back.headings[0] == flat(QUESTION)
        assert "## Sources" in back.body

    # the sources read but not cited, only when asked for, after the cited ones
    full = _write(content, tmp_path / f"full.{fmt}", include_consulted=True)
    _check_structure(full, list(range(1, 13)))
    assert [n for n, _ in full.sources("Also consulted")] == [13, 14]
    for n, entry in full.sources("Also consulted"):
        assert _entry_holds(entry, by_number[n], fmt)
    assert flat(OPEN_QUESTION) in flat(full.after["Open questions"])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_real_run_round_trips(
    qapp: Any, tmp_path: Path, real_run: tuple[Path, str], fmt: str
) -> None:
    home, run_id = real_run
    store = RunStore(home_paths(home).catalog_file)
    try:
        content = stored_content(store, run_id)
    finally:
        store.close()
    by_number = {e.number: e for e in content.evidence}
    assert by_number, "the run read no source"
    body, _ = split_report(content.markdown)
    cited = first_cited(body, by_number)
    assert cited, "the starter's report cites no source: nothing to resolve"

    back = _write(content, tmp_path / f"report.{fmt}")
    _check_structure(back, cited)
    for n, entry in back.sources():
        assert _entry_holds(entry, by_number[n], fmt), f"source [{n}] is not intact: {entry[:300]}"
    assert "Open questions" in back.headings

    full = _write(content, tmp_path / f"full.{fmt}", include_consulted=True)
    listed = [n for n, _ in full.sources()] + [n for n, _ in full.sources("Also consulted")]
    assert sorted(listed) == sorted(by_number) and len(set(listed)) == len(listed)
