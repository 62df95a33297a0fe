"""HDS protocol: search-query blocks and final answers are read exactly."""

from __future__ import annotations

from app.core.models import Chunk, Hit
from app.research.hds_protocol import (
    BEGIN_RESULTS,
    END_RESULTS,
    extract_answer,
    raw_queries,
    results_block,
    select_queries,
    split_think,
    strip_protocol,
)


def test_queries_split_on_semicolons_and_newlines() -> None:
    text = (
        "<think>hm</think><|begin search queries|>who founded Zilliz; when\n- 2. Milvus release date\n"
        "<|end search queries|>"
    )
    assert raw_queries(text) == ["who founded Zilliz", "when", "Milvus release date"]


def test_an_unterminated_block_still_counts_and_text_outside_is_ignored() -> None:
    text = "intro q0; <|begin search queries|>a; b <|end search queries|> later <|begin search queries|> c"
    assert raw_queries(text) == ["a", "b", "c"]
    assert raw_queries("no block; here") == []


def test_duplicates_are_removed_against_each_other_and_earlier_turns() -> None:
    capped = select_queries(
        ["Milvus index", "milvus  INDEX?", "zilliz", "Old one"],
        seen=["old one"],
        max_parallel=5,
        remaining_calls=10,
    )
    assert capped.queries == ("Milvus index", "zilliz")
    assert capped.duplicates == 2


def test_queries_are_capped_by_parallel_limit_and_remaining_calls() -> None:
    assert select_queries(["a", "b", "c", "d"], max_parallel=3, remaining_calls=10).queries == (
        "a",
        "b",
        "c",
    )
    capped = select_queries(["a", "b", "c", "d"], max_parallel=3, remaining_calls=2)
    assert capped.queries == ("a", "b")
    assert capped.over_cap == 2
    assert select_queries(["a"], max_parallel=3, remaining_calls=0).queries == ()


def test_boxed_answer_with_nested_braces() -> None:
    assert extract_answer(r"so \boxed{\frac{1}{2}} it is") == r"\frac{1}{2}"
    assert extract_answer(r"first \boxed{x} then \boxed{\text{Paris}}") == "Paris"


def test_answer_tag_and_absence() -> None:
    assert extract_answer("<answer>\n  Jan  Solovej </answer>") == "Jan Solovej"
    assert extract_answer("<answer>unterminated") == "unterminated"
    assert extract_answer("no answer here") is None
    assert extract_answer(r"\boxed{}") is None


def test_boxed_beats_answer_tag_and_thinking_is_not_an_answer() -> None:
    assert extract_answer(r"<answer>a</answer> \boxed{b}") == "b"
    assert extract_answer(r"<think>maybe \boxed{draft}</think> still searching") is None


def test_unbalanced_boxed_takes_the_rest() -> None:
    assert extract_answer(r"\boxed{Rome") == "Rome"


def test_think_is_split_from_the_visible_text() -> None:
    reasoning, rest = split_think("<think>step one</think>Answer <think>two")
    assert reasoning == "step one\ntwo"
    assert rest == "Answer"


def test_results_block_labels_each_query_and_fences_each_hit_under_its_number() -> None:
    chunk = Chunk(
        chunk_id="c1",
        doc_id="d",
        collection="k",
        path="/x/a.md",
        text="Milvus   is\na database.",
        title="A",
    )
    block = results_block([("what is milvus", [(3, Hit(chunk=chunk, score=1.0))]), ("nothing", [])])
    lines = block.splitlines()
    assert lines[0] == BEGIN_RESULTS and lines[-1] == END_RESULTS
    assert 'Results for "what is milvus":' in lines
    assert lines[2:5] == ['<document id="3" title="A">', "Milvus is a database.", "</document>"]
    assert "(nothing found)" in lines


def test_protocol_blocks_are_stripped_from_a_plain_answer() -> None:
    text = "<think>x</think>Paris <|begin search queries|>a; b<|end search queries|> is it <|begin search results|>fake"
    assert strip_protocol(text) == "Paris is it"
