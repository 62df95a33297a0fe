"""Replay the quote choice on a MuSiQue run's records.

Which picked passages are quoted under a report (:func:`app.research.quote_choice.rested_on`)
is a pure function of what the run recorded: the findings step's picks (``picked``, with
``numbered`` mapping evidence numbers to corpus paragraphs), the report's citations
(unflagged and flagged sentences, read back from the report text) and the short answer.
This script rebuilds them from ``bench_musique.py --jsonl`` records and prints, per
file, how many recorded quote lists the replay reproduces, and the cited recall (prose
and quotes) and quoted precision of the replayed quotes, so a new rule can be measured
on a finished run without running the model again.

    .venv/bin/python tests/bench/replay_quotes.py RUN.jsonl [RUN2.jsonl …]
"""

from __future__ import annotations

import ast
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locate_data import shared_data_dir

from app.research.quote_choice import Picked, rested_on

SOURCE = re.compile(r"^- \[(\d+)\] .*?/p(\d+)\.md", re.M)  # "- [2] Title — …/p0010.md"
CITATION = re.compile(r"\[(\d+(?:, *\d+)*)\]\.?(\s*⚠)?")
FLAG_NOTE = re.compile(r"\s*\*\(not supported by.*?\)\*")


def field(record: dict[str, Any], key: str) -> Any:
    value = record[key]
    return ast.literal_eval(value) if isinstance(value, str) else value


def citations(report: str, evidence_of: dict[int, int]) -> tuple[set[int], set[int]]:
    """(evidence numbers cited by unflagged sentences, by flagged ones) of ``report``,
    whose numbers its Sources list maps to corpus paragraphs."""
    source = {int(n): int(p) for n, p in SOURCE.findall(report)}
    body = report.split("### What the sources say")[0].split("## Sources")[0]
    body = FLAG_NOTE.sub("", body)
    cited: set[int] = set()
    flagged: set[int] = set()
    for match in CITATION.finditer(body):
        paragraphs = [source.get(int(n)) for n in match.group(1).split(",")]
        numbers = {evidence_of[p] for p in paragraphs if p in evidence_of}
        (flagged if match.group(2) else cited).update(numbers)
    return cited, flagged


def replay(path: Path, corpus: list[dict[str, str]]) -> None:
    same = 0
    recall: list[float] = []
    precision: list[float] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        paragraph = dict(field(record, "numbered"))
        evidence_of = {p: n for n, p in paragraph.items()}
        gold = set(field(record, "gold"))
        picked = [
            Picked(n, corpus[paragraph[n]]["title"], corpus[paragraph[n]]["text"])
            for n in field(record, "picked")
        ]
        cited, flagged = citations(record["report"], evidence_of)
        answer = "" if str(record["abstained"]) == "True" else record["prediction"]
        quoted = {
            paragraph[n] for n in rested_on(record["question"], picked, cited, answer, flagged)
        }
        same += quoted == set(field(record, "quoted"))
        if gold:
            shown = quoted | set(field(record, "cited_prose"))
            recall.append(len(shown & gold) / len(gold))
            precision.append(len(quoted & gold) / len(quoted) if quoted else 0.0)
    n = len(recall)
    print(
        f"{path}: {same} of {n} recorded quote lists replayed exactly; cited recall "
        f"{statistics.fmean(recall):.3f}, quoted precision {statistics.fmean(precision):.3f}"
    )


def main() -> int:
    corpus = json.loads((shared_data_dir() / "musique" / "corpus.json").read_text("utf-8"))
    for arg in sys.argv[1:]:
        replay(Path(arg), corpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
