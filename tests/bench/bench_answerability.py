"""Does the library answer the question? The judgement, measured apart from a run.

For MuSiQue questions (``../shared/data/musique``; by default 20–99, apart from the
20 that ``bench_musique.py`` asks), each question's own paragraphs stand for what a
search found: all of them (its supporting paragraphs among MuSiQue's distractors, which
share its names and subject), and the distractors alone (the supporting paragraphs
withheld). :mod:`app.research.answerability` judges both, with the library's
embedding model (MiniLM), by its signals one at a time and together:

* **names**: a name or number of the question in none of the passages;
* **meaning**: no sentence close to the question;
* **subject**: the question's subject named only in passing (no passage about it,
  every sentence naming it far from the question).

Printed: the share judged "not answered" with and without the supporting paragraphs
(the first should be high, the second low), and the questions the subject signal
changes.

    .venv/bin/python tests/bench/bench_answerability.py [--offset 20] [--limit 80]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locate_data import shared_data_dir

from app.ingest.embedder import OnnxMiniLMEmbedder
from app.research import answerability
from app.research.answerability import Found

SIGNALS = ("names", "names + meaning", "names + meaning + subject")


async def judged(question: str, found: list[Found], embed: Any) -> dict[str, bool]:
    """Not answered, by each set of signals."""
    near = await answerability.nearest(question, found, embed)
    subject = await answerability.nearest_naming_subject(question, found, embed)
    return {
        SIGNALS[0]: not answerability.judge(question, found).answered,
        SIGNALS[1]: not answerability.judge(question, found, near).answered,
        SIGNALS[2]: not answerability.judge(question, found, near, subject).answered,
    }


async def main_async(args: argparse.Namespace) -> int:
    data = shared_data_dir() / "musique" / "questions.json"
    questions = json.loads(data.read_text(encoding="utf-8"))[args.offset : args.offset + args.limit]
    embedder = OnnxMiniLMEmbedder()

    async def embed(texts: list[str]) -> Any:
        return await asyncio.to_thread(embedder.embed, texts)

    counts = {case: dict.fromkeys(SIGNALS, 0) for case in ("whole", "withheld")}
    for question in questions:
        for case in counts:
            found = [
                Found(p["title"], p["paragraph_text"])
                for p in question["paragraphs"]
                if case == "whole" or not p["is_supporting"]
            ]
            verdicts = await judged(question["question"], found, embed)
            for signal, said in verdicts.items():
                counts[case][signal] += said
            if verdicts[SIGNALS[1]] != verdicts[SIGNALS[2]]:
                print(f"  subject signal, {case}: {question['question']}")
    n = len(questions)
    print(f"\nMuSiQue questions {args.offset}–{args.offset + n - 1}: share judged 'not answered'\n")
    print("| signals | supporting paragraphs withheld | whole (should answer) |")
    print("|---|---|---|")
    for signal in SIGNALS:
        withheld, whole = counts["withheld"][signal], counts["whole"][signal]
        print(f"| {signal} | {withheld / n:.2f} ({withheld}/{n}) | {whole / n:.2f} ({whole}/{n}) |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offset", type=int, default=20, help="first question (default 20)")
    parser.add_argument("--limit", type=int, default=80, help="number of questions (default 80)")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
