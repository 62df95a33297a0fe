"""The report writer reads the multi-hop chain first, for real: the starter model
(SmolLM2-135M through llama-cpp-python) runs over a real Milvus Lite
library of the real MuSiQue paragraphs of one two-hop question
(tests/musique_thread.py), in ``quick`` mode: "Maiden Japan" (names Iron Maiden) then "Iron Maiden"
(where the band formed), among 18 distractors.

The tiny model's wording is not asserted; what the writer and the short answer are
given, and what the report's citations point to, is: the two links come first in
the prompt that picks the passages the answer rests on and in
``Report.written_from``, each link's snippet keeps the sentence that names the
other, the picked passages are quoted (their own words) and cited under the
report, every report sentence that restates the shown passages cites one that
holds it, and the short answer reads the report with its quotes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from musique_thread import ANSWER_FILE, FOLLOW_UP_FILE, ingest_paragraphs
from prompt_audit import RecordingModel
from test_follow_up_real import fences

from app.core.events import Finished, IngestFinished
from app.core.models import Budget
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.library import Library
from app.llm.llamacpp import LlamaCppModel
from app.research.citations import content_words, sentences, split_report
from app.research.engine import ResearchEngine

pytestmark = pytest.mark.slow

QUESTION = "Where was the band that performed the live EP Maiden Japan formed?"
# quick: the evidence is the search's top hits, with no model judging them first, so what
# the writer is given does not hang on the tiny model's judgement
BUDGET = Budget(max_rounds=1, top_k=6, max_seconds=300, max_concurrent_calls=1)
OPTIONS = {"report_max_tokens": 160, "prompt_chars": 3000, "short_answer": True}


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AppPaths:
    paths, _files, finished = ingest_paragraphs(
        shared_data, tmp_path_factory.mktemp("writer-evidence-real")
    )
    assert isinstance(finished, IngestFinished) and finished.failed == 0
    return paths


async def test_the_writer_reads_the_chain_first_and_claims_cite_it(
    corpus: AppPaths, starter_llm: LlamaCppModel
) -> None:
    library = Library.open(Settings(), corpus)
    try:
        recording = RecordingModel(starter_llm)
        engine = ResearchEngine(recording, library)  # type: ignore[arg-type]
        events = [
            e async for e in engine.run(QUESTION, mode="quick", budget=BUDGET, options=OPTIONS)
        ]
        done = events[-1]
        assert isinstance(done, Finished), done
        report = done.report
        by_number = {e.number: e for e in report.evidence}
        first_link = next(e.number for e in report.evidence if e.path.endswith(ANSWER_FILE))
        second_link = next(e.number for e in report.evidence if e.path.endswith(FOLLOW_UP_FILE))

        # the chain comes first, in the record and in the writer's prompt
        assert list(report.written_from[:2]) == [first_link, second_link], report.written_from
        # the findings step reads the passages the writer is given, in that order
        picking = next(
            p for p in reversed(recording.prompts) if "You read documents" in p[0]["content"]
        )
        shown = [f for f in fences(picking) if f[1]]
        assert [title for _, title, _ in shown[:2]] == ["Maiden Japan", "Iron Maiden"], shown
        assert "Iron Maiden" in shown[0][2]  # the first link's snippet keeps the name of the second

        # the passages it picked are quoted under the report, each cited: the document's own words
        body, _ = split_report(report.markdown)
        quotes = [line for line in body.splitlines() if line.startswith("> “")]
        assert quotes, report.markdown
        for line in quotes:
            quoted, number = line[3:].rsplit("” [", 1)
            source = " ".join(by_number[int(number.rstrip("]"))].quote.split())
            assert quoted.split(" … ")[0][:60].rstrip(" …") in source or len(source) >= 399, (
                line,
                source,
            )

        # every sentence that restates the passages the writer read cites one that holds it
        written = {n: content_words(by_number[n].quote) for n in report.written_from}
        for sentence in sentences(body):
            words = content_words(sentence.claim)
            if len(words) < 3 or sentence.text.endswith("?"):
                continue
            best = max(len(words & w) / len(words) for w in written.values())
            if best >= 0.9:  # it restates one passage nearly word for word
                cover = set().union(*(written.get(n, set()) for n in sentence.numbers))
                assert len(words & cover) / len(words) >= 0.6, (sentence, report.markdown)

        # the short answer reads the report and every passage picked; the quotes are those of
        # them the answer rests on (see app.research.quote_choice), in the same order
        quoted_numbers = [int(line.rsplit("[", 1)[1].rstrip("]")) for line in quotes]
        assert [n for n in report.answer_from if n in quoted_numbers] == quoted_numbers
        answer_prompt = next(
            p for p in reversed(recording.prompts) if "shortest answer" in p[0]["content"]
        )
        assert quotes[0][3:40] in answer_prompt[-1]["content"]
        print(
            f"\nwriter read: {[t for _, t, _ in shown]}\nreport:\n{report.markdown}\nanswer: {report.answer!r}"
        )
    finally:
        await library.aclose()
