"""Table mode: sentence markers let the model point at text by number."""

from __future__ import annotations

from app.research.sentence_markers import mark_sentences, parse_ranges, quote_for, split_sentences


def test_each_sentence_gets_a_number() -> None:
    marked = mark_sentences(
        "Milvus is a vector database. It was created by Zilliz in 2019! Is it fast? Yes."
    )
    assert marked.text == (
        "<1> Milvus is a vector database. <2> It was created by Zilliz in 2019! <3> Is it fast? <4> Yes."
    )
    assert marked.span(2, 3) == "It was created by Zilliz in 2019! Is it fast?"


def test_list_items_and_paragraphs_are_separate_sentences() -> None:
    assert split_sentences("Intro line\n\n- one\n- two") == ["Intro line", "- one", "- two"]


def test_abbreviations_and_decimals_are_not_split() -> None:
    assert split_sentences("Version 2.5 is out. e.g. this") == ["Version 2.5 is out. e.g. this"]


def test_overlong_sentences_are_cut() -> None:
    sentences = split_sentences("word " * 300)
    assert len(sentences) > 1
    assert all(len(s) <= 400 for s in sentences)


def test_ranges_in_every_shape_the_model_writes() -> None:
    assert parse_ranges([{"start": 2, "end": 3}], 5) == [(2, 3)]
    assert parse_ranges({"start": "4"}, 5) == [(4, 4)]
    assert parse_ranges([1, 2], 5) == [(1, 2)]
    assert parse_ranges("1-2, 4", 5) == [(1, 2), (4, 4)]
    assert parse_ranges(3, 5) == [(3, 3)]


def test_invalid_ranges_are_fixed_or_dropped() -> None:
    assert parse_ranges([{"start": 3, "end": 1}], 5) == [(1, 3)]  # reversed
    assert parse_ranges([{"start": 4, "end": 99}], 5) == [(4, 5)]  # clamped
    assert parse_ranges([{"start": 9, "end": 12}, 0, -1], 5) == []  # outside
    assert parse_ranges([{"start": 1, "end": 5}], 5, max_span=2) == [(1, 2)]  # too long
    assert parse_ranges([[2, 2], "2"], 5) == [(2, 2)]  # duplicate
    assert parse_ranges(["x", None, True, {"end": 2}], 5) == []  # nonsense


def test_the_quote_is_the_chunks_own_text() -> None:
    marked = mark_sentences("Alpha is one. Beta is two. Gamma is three.")
    assert quote_for(marked, [(1, 1), (3, 3)]) == "Alpha is one. … Gamma is three."
