"""Which passages the answer rests on, by their words (app.research.answer_basis): on the
real paragraphs of MuSiQue questions, and on the near misses a small model keeps."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from app.research.answer_basis import basis
from app.research.report import rested_on
from app.research.writer_evidence import Passage


def question(shared_data: Path, qid: str) -> dict:  # type: ignore[type-arg]
    questions = json.loads((shared_data / "musique" / "questions.json").read_text(encoding="utf-8"))
    return next(q for q in questions if q["id"] == qid)


def passages(q: dict) -> list[Passage]:  # type: ignore[type-arg]
    return [Passage(i, p["title"], p["paragraph_text"]) for i, p in enumerate(q["paragraphs"])]


def test_a_two_hop_chain_is_found_among_its_distractors(shared_data: Path) -> None:
    q = question(shared_data, "2hop__243339_774871")  # Maiden Japan → Iron Maiden, 18 distractors
    shown = passages(q)
    chosen = basis(q["question"], shown)
    assert [shown[n].title for n in chosen] == ["Maiden Japan", "Iron Maiden"]  # anchor, then its link


def test_a_passage_sharing_only_part_of_the_question_s_names_is_not_an_anchor() -> None:
    shown = [
        Passage(1, "John Leland", "John Leland was an English writer and antiquary who travelled across England."),
        Passage(
            2,
            "Leland, North Carolina",
            "Leland is a town in Brunswick County, North Carolina. In 1986 the film Maximum Overdrive "
            "was shot in and around Leland.",
        ),
        Passage(3, "Maximum Overdrive", "Maximum Overdrive is a 1986 film written and directed by Stephen King."),
        Passage(4, "Der Bockerer", "Der Bockerer is a 1981 Austrian film directed by Franz Antel."),
    ]
    question_ = "Who directed the film that was shot in or around Leland, North Carolina in 1986?"
    assert basis(question_, shown) == [2, 3]  # the writer named Leland and the other film are near misses


def test_passages_of_one_document_and_shared_names_are_links() -> None:
    shown = [
        Passage(
            1,
            "Journal of Psychotherapy Integration",
            "The Journal of Psychotherapy Integration is published by the American Psychological Association.",
        ),
        Passage(
            2,
            "Adolescence",
            "Hall, who was the first president of the American Psychological Association, wrote on adolescence.",
        ),
        Passage(3, "Park Geun-hye", "Park was the first woman to be President of South Korea."),
    ]
    question_ = "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    assert basis(question_, shown) == [1, 2]  # bridged by a name the question does not hold
    # Park holds "first" and "president" too, but nothing links her to the journal


def test_nothing_of_the_question_held_gives_no_basis() -> None:
    shown = [Passage(1, "Tenaru Falls", "Tenaru Falls is a waterfall in the rainforest of Guadalcanal.")]
    assert basis("Who founded Publix?", shown) == []


def test_the_model_s_picks_are_kept_where_the_words_bear_them_out() -> None:
    shown = [
        Passage(1, "Milvus Lite", "Milvus Lite is the lightweight version of Milvus that runs in Python."),
        Passage(2, "Milvus Standalone", "Milvus Standalone runs Milvus in one Docker container."),
        Passage(3, "Milvus Lite and Standalone", "Milvus Lite suits prototypes; Milvus Standalone serves production."),
    ]
    question_ = "How does Milvus Lite differ from Milvus Standalone?"
    grounded = basis(question_, shown)
    assert 3 in grounded
    assert rested_on(question_, shown, [3]) == [3]  # the model's pick, borne out
    assert rested_on(question_, shown, [99]) == grounded  # none borne out: the words decide
    assert rested_on("Who founded Publix?", shown, [2, 1]) == [2, 1]  # the words find nothing: the picks stand


def test_on_real_questions_the_basis_is_mostly_gold(shared_data: Path) -> None:
    """Over MuSiQue questions 20–99 (all 20 paragraphs each: 2–4 gold, the rest
    distractors chosen to look alike), about half of what the basis keeps is gold,
    against about a sixth of all paragraphs (measured: precision 0.51, recall 0.55)."""
    questions = json.loads((shared_data / "musique" / "questions.json").read_text(encoding="utf-8"))[20:100]
    precision, recall, share = [], [], []
    for q in questions:
        gold = {i for i, p in enumerate(q["paragraphs"]) if p["is_supporting"]}
        chosen = set(basis(q["question"], passages(q)))
        precision.append(len(gold & chosen) / len(chosen) if chosen else 0.0)
        recall.append(len(gold & chosen) / len(gold))
        share.append(len(gold) / len(q["paragraphs"]))
    assert statistics.mean(precision) >= 0.45
    assert statistics.mean(recall) >= 0.5
    assert statistics.mean(precision) >= 2.5 * statistics.mean(share)
