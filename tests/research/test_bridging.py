"""Bridge queries: rule-written follow-ups that name what a relevant passage names.

Unit tests of the rule, then the rule over a real library: one MuSiQue question's
20 paragraphs ingested through Docling into Milvus Lite, where the question alone
misses the second hop and the bridge queries find it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.events import IngestFinished
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.library import Library
from app.research.bridging import bridge_queries, names

QUESTION = "Who was the first president of the association which published Journal of Psychotherapy Integration?"
JOURNAL = (
    "Journal of Psychotherapy Integration",
    "The Journal of Psychotherapy Integration is a peer-reviewed academic journal published by the American "
    "Psychological Association on behalf of the Society for the Exploration of Psychotherapy Integration. "
    "It was established in 1991 and covers research in psychotherapy.",
)


def test_names_are_capitalised_runs_without_leading_function_words() -> None:
    text = "In the Church of England, the Bank of England met Acme Corp. and IBM in 1991."
    assert names(text) == ["Church of England", "Bank of England", "Acme Corp", "IBM"]


def test_bridge_queries_pair_the_uncovered_question_words_with_new_names() -> None:
    queries = bridge_queries(QUESTION, [JOURNAL], limit=3)
    # "first president" is what the passage did not say; the journal's own name is
    # already in the question, so it is not followed
    assert queries == [
        "first president American Psychological Association",
        "first president Society for the Exploration of Psychotherapy Integration",
    ]
    assert bridge_queries(QUESTION, [JOURNAL], limit=1) == queries[:1]
    assert bridge_queries(QUESTION, [JOURNAL], limit=0) == []
    assert bridge_queries("", [JOURNAL]) == []
    assert bridge_queries(QUESTION, [("Notes", "nothing capitalised here at all.")]) == []


def test_a_passage_that_covers_every_question_word_keeps_them_all() -> None:
    passage = ("Acme", "Acme was founded by Jane Roe, who later led Widget Works.")
    assert bridge_queries("Who founded Acme?", [passage], limit=2) == [
        "founded acme Jane Roe",
        "founded acme Widget Works",
    ]


# -- over a real library ------------------------------------------------------------------


@pytest.mark.slow
async def test_bridge_queries_find_the_second_hop_the_question_misses(
    shared_data: Path, tmp_path: Path
) -> None:
    question = json.loads((shared_data / "musique" / "questions.json").read_text(encoding="utf-8"))[
        0
    ]
    assert question["question"] == QUESTION
    folder = tmp_path / "paragraphs"
    folder.mkdir()
    gold: set[str] = set()
    for i, para in enumerate(question["paragraphs"]):
        name = f"p{i:02d}.md"
        (folder / name).write_text(
            f"# {para['title']}\n\n{para['paragraph_text']}\n", encoding="utf-8"
        )
        if para["is_supporting"]:
            gold.add(name)
    paths = AppPaths(
        config_dir=tmp_path / "c", data_dir=tmp_path / "d", cache_dir=tmp_path / "k"
    ).ensure()
    library = Library.open(Settings(), paths)
    try:
        final = None
        async for event in library.ingest([folder], "musique"):
            if isinstance(event, IngestFinished):
                final = event
        assert final is not None and final.indexed == len(question["paragraphs"])

        (hits,) = await library.search([QUESTION], top_k=2)
        found = {Path(h.chunk.path).name for h in hits}
        assert len(found & gold) == 1  # the question alone reaches one hop only

        bridges = bridge_queries(QUESTION, [(h.chunk.title, h.chunk.text) for h in hits], limit=3)
        assert bridges
        for more in await library.search(bridges, top_k=2):
            found |= {Path(h.chunk.path).name for h in more}
        assert gold <= found  # the bridges reach the second hop
    finally:
        await library.aclose()
