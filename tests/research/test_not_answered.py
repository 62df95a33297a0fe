"""A report says when the documents do not answer the question, instead of writing an
answer from near misses; and does not when they do."""

from __future__ import annotations

import json
from pathlib import Path

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, make_chunk, verdicts

from app.core.events import Finished
from app.research.answerability import (
    MIN_SIMILARITY,
    MIN_SUBJECT_SIMILARITY,
    NOT_ANSWERED,
    Found,
    judge,
    nearest,
    nearest_naming_subject,
)
from app.research.citations import sentences, split_report
from app.research.engine import ResearchEngine

SCRIPT = {
    "decompose": {"sub_queries": ["Milvus features"]},
    "judge": {"relevant": [1, 2, 3]},
    "reflect": {"done": True, "summary": "", "gap_queries": []},
    "citation_check": verdicts(),
    "short_answer": {"answer": "Zilliz"},
}


def paragraphs(shared_data: Path) -> tuple[dict[str, object], list[str], list[str]]:
    """A MuSiQue question, its supporting paragraphs and its other (distractor) paragraphs."""
    questions = json.loads((shared_data / "musique" / "questions.json").read_text(encoding="utf-8"))
    question = next(q for q in questions if "Maiden Japan" in q["question"])
    gold = [
        f"{p['title']}\n\n{p['paragraph_text']}"
        for p in question["paragraphs"]
        if p["is_supporting"]
    ]
    other = [
        f"{p['title']}\n\n{p['paragraph_text']}"
        for p in question["paragraphs"]
        if not p["is_supporting"]
    ]
    return question, gold, other


def test_what_was_asked_about_must_be_in_what_was_found(shared_data: Path) -> None:
    question, gold, other = paragraphs(shared_data)
    text = str(question["question"])
    assert judge(text, gold + other).answered
    # an acronym beside a name is a name of its own ("EP", "Maiden Japan"), not "EP Maiden Japan"
    assert judge(
        "Where was the band that performed the live EP Maiden Japan formed?", gold
    ).answered
    # the supporting paragraphs withheld: nothing found mentions the live EP asked about
    # (its distractors say "Iron Maiden" and "Japan", not "Maiden Japan")
    missing = judge(text, [p for p in other if "Maiden Japan" not in p])
    assert not missing.answered and missing.reason == "None of them mentions “Maiden Japan”."
    assert not judge(text, []).answered


def test_a_name_in_a_passage_s_title_counts_as_mentioned() -> None:
    found = [
        Found(
            "Maiden Japan", "It is a live EP by the English heavy metal band, recorded in Nagoya."
        )
    ]
    assert judge("Who performed the live EP Maiden Japan?", found).answered
    assert not judge("Who performed the live EP Maiden Japan?", [found[0].text]).answered


async def test_passages_on_other_subjects_only_do_not_answer_a_question_without_names() -> None:
    embed = MemoryLibrary([]).embed  # the real embedding model (MiniLM)
    question = "how long should bread dough rise before baking?"
    near_miss = [
        Found("Tax returns", "A tax return is filed once a year."),
        Found("Bicycles", "A bicycle has two wheels."),
    ]
    on_topic = [
        Found(
            "Sourdough",
            "The dough of sourdough bread rises for four to twelve hours before it is baked.",
        )
    ]
    far = await nearest(question, near_miss, embed)
    close = await nearest(question, on_topic, embed)
    assert far is not None and close is not None and far < MIN_SIMILARITY <= close
    assert judge(question, near_miss).answered  # no names to miss: the words alone cannot tell
    verdict = judge(question, near_miss, far)
    assert not verdict.answered and "close to what it asks" in verdict.reason
    assert judge(question, on_topic, close).answered
    assert await nearest(question, on_topic, None) is None  # no embedding model: words only


async def test_passages_naming_the_subject_only_in_passing_do_not_answer() -> None:
    embed = MemoryLibrary([]).embed  # the real embedding model (MiniLM)
    question = "What country was the author of Brand a citizen of?"
    author = Found("Henrik Ibsen", "The author Henrik Ibsen was a citizen of Norway.")
    shoes = Found("Shoes", "Nike sells every Brand of running shoe at its outlet in Oregon.")
    play = Found("Brand (play)", "Brand is a verse tragedy in five acts by Henrik Ibsen.")
    passing = await nearest_naming_subject(question, [author, shoes], embed)
    assert passing is not None and passing < MIN_SUBJECT_SIMILARITY
    verdict = judge(question, [author, shoes], None, passing)
    assert not verdict.answered and verdict.reason == (
        "None of them is about “Brand”: they name it only in passing."
    )
    # a passage about it (its title names it): nothing to measure, answered
    assert await nearest_naming_subject(question, [author, shoes, play], embed) is None
    assert judge(question, [author, shoes, play]).answered
    # a sentence on the subject close to the question is no passing mention
    on_subject = Found(
        "Plays", "Brand, a play by the Norwegian author Henrik Ibsen, a citizen of Norway."
    )
    close = await nearest_naming_subject(question, [author, on_subject], embed)
    assert close is not None and close >= MIN_SUBJECT_SIMILARITY
    assert judge(question, [author, on_subject], None, close).answered
    # no embedding model, or no name in the question: not measured
    assert await nearest_naming_subject(question, [author, shoes], None) is None
    assert await nearest_naming_subject("who wrote the play?", [author, shoes], embed) is None


def test_a_name_found_only_as_a_lowercase_word_is_not_mentioned() -> None:
    question = "What country was the author of Brand a citizen of?"
    vodka = Found("Glen's Vodka", "The brand was relaunched in 2003 as Glen's Vodka.")
    author = Found("Henrik Ibsen", "The author Henrik Ibsen was a citizen of Norway.")
    verdict = judge(question, [vodka, author])
    assert not verdict.answered
    assert verdict.reason == "None of them names “Brand”: only the word “brand” turns up."
    # the name in a title, or capitalised in the text (a sentence's first word included)
    assert judge(question, [vodka, author, Found("Brand (play)", "A verse tragedy.")]).answered
    assert judge(question, [vodka, Found("Plays", "Brand is a verse tragedy.")]).answered
    assert judge(question, [vodka, Found("Ibsen", "He wrote Brand in Rome.")]).answered


def test_a_word_for_a_people_is_not_a_name_the_passages_must_hold() -> None:
    antwerp = "The 1920 Summer Olympics were held in Antwerp, Belgium."
    # a word that describes ("a European city") need not be found
    assert judge("Which European city held the 1920 Summer Olympics?", [antwerp]).answered
    # nor one whose place is found ("Italy" for "Italian")
    question = "Was Aida written by an Italian?"
    assert judge(question, ["Aida is an opera by Verdi of Italy."]).answered
    assert not judge(question, ["Aida is an opera by Verdi."]).answered
    assert not judge("Which European city held the Nordic Games?", [antwerp]).answered


def test_a_question_that_opens_with_a_verb_is_not_asking_about_that_word() -> None:
    passages = ["Milvus is licensed under Apache 2.0.", "Qdrant is licensed under Apache 2.0 too."]
    assert judge("List every vector database with its licence.", passages).answered
    assert judge("Compare Milvus and Qdrant.", passages).answered
    assert not judge("Compare Milvus and Pinecone.", passages).answered


def test_a_name_is_found_however_its_accents_are_written() -> None:
    passage = "Aschenbrödel is an operetta by Johann Strauss II."
    assert judge("Who composed Aschenbrodel?", [passage]).answered
    assert judge("Who composed Aschenbrödel?", ["Aschenbrodel, an operetta."]).answered


async def test_a_run_over_documents_about_something_else_says_they_do_not_answer() -> None:
    chunks = [
        *MILVUS_CHUNKS,
        make_chunk("c9", "Qdrant is a vector database written in Rust, with payload filtering."),
    ]
    text = "Milvus is an open-source vector database [1]. Qdrant is written in Rust [2]."
    model = ScriptedModel(SCRIPT, text=text)
    question = "Who founded Pinecone, and in which year?"
    events = await collect(
        ResearchEngine(model, MemoryLibrary(chunks)).run(
            question, mode="quick", options={"short_answer": True}
        )
    )
    final = events[-1]
    assert isinstance(final, Finished)
    report = final.report
    assert report.answered is False
    body, _ = split_report(report.markdown)
    assert body.startswith(f"### {NOT_ANSWERED} None of them mentions “Pinecone”.")
    assert report.open_questions[0].startswith(NOT_ANSWERED)
    assert report.answer == ""  # no short answer from near misses
    # the heading is not one of the report's sentences: they are still counted and checked as written
    assert [s.claim for s in sentences(body)] == [
        "Milvus is an open-source vector database.",
        "Qdrant is written in Rust.",
    ]


async def test_a_run_whose_documents_answer_says_nothing_of_the_kind() -> None:
    text = "Milvus is an open-source vector database built for similarity search [1]."
    model = ScriptedModel(SCRIPT, text=text)
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(
            "What is Milvus?", mode="quick", options={"short_answer": True}
        )
    )
    report = events[-1].report
    assert report.answered is True and NOT_ANSWERED not in report.markdown
