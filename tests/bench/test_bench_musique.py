"""The MuSiQue bench's evidence funnel and its before → after comparison (the
figures README quotes), on hand-made records."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_musique import FUNNEL, Record, compare, funnel_table, load_records, quoted_numbers


def record(mode: str, qid: str, **stages: list[int]) -> Record:
    return Record(mode=mode, qid=qid, question="q", answers=["a"], gold=[1, 2], **stages)  # type: ignore[arg-type]


def test_the_funnel_shows_where_the_gold_passages_are_lost() -> None:
    r = record("deep", "q1", retrieved=[1, 2, 5], judged=[1, 2], written=[2, 7], cited=[2], used=[])
    assert [r.recall(stage) for stage in FUNNEL] == [1.0, 1.0, 0.5, 0.5, 0.0]
    r.cited_prose, r.quoted = [2, 7], [2, 5, 7, 8]
    other = record(
        "deep", "q2", retrieved=[1], judged=[1], written=[1], cited=[1], used=[1], quoted=[1]
    )
    table = funnel_table([r, other, record("quick", "q1", retrieved=[3])], ["quick", "deep"])
    lines = table.splitlines()
    assert lines[2] == (
        "| mode | retrieved | judged | written | cited | used "
        "| cited by the prose | its precision | quoted | their precision | F1 |"
    )
    assert lines[4].startswith("| quick | 0.00 | 0.00 |")
    assert lines[4].endswith("| 0.00 | – | 0.00 | – | 0.00 |")  # nothing cited: no precision
    # prose: q1 cites 1 of 2 gold (0.5), q2 none (0); precision 1/2 over the one record that cites
    # quotes: q1 quotes 1 gold of 4 (0.25), q2 1 of 1 (1.0)
    assert (
        lines[5]
        == "| deep | 0.75 | 0.75 | 0.50 | 0.50 | 0.25 | 0.25 | 0.50 (1/2) | 0.50 | 0.62 (2/2) | 0.00 |"
    )


def test_the_quotes_are_read_from_the_report_s_markdown() -> None:
    markdown = (
        "Hall was its first president [1].\n\n### What the sources say\n\n"
        "> “Hall, who was the first president …” [1]\n\n> “The journal is published by the APA.” [3]\n\n"
        "## Sources\n\n> “not a quote of the report” [9]\n"
    )
    assert quoted_numbers(markdown) == {1, 3}


def test_compare_pairs_the_questions_both_runs_answered(tmp_path: Path) -> None:
    before = [
        record("deep", "q1", cited=[]),
        record("deep", "q2", cited=[1]),
        record("deep", "q3", cited=[1, 2]),
    ]
    after = [
        record("deep", "q1", cited=[1, 2]),
        record("deep", "q2", cited=[1, 2]),
    ]  # q3 not run yet
    path = tmp_path / "after.jsonl"
    path.write_text("".join(json.dumps({**r.__dict__, "unknown_field": 1}) + "\n" for r in after))
    loaded = load_records(path)  # a field the bench no longer knows is skipped
    assert [r.cited for r in loaded] == [[1, 2], [1, 2]]
    row = compare(before, loaded, ["deep"]).splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:2] == ["deep", "2"]
    assert cells[2 + FUNNEL.index("cited")] == "0.25 → 1.00"
