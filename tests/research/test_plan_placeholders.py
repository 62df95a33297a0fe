"""Plan mode: {{step_N}} placeholders are filled from earlier steps' findings."""

from __future__ import annotations

from app.research.placeholders import (
    fill_placeholders,
    placeholder_names,
    short_finding,
    step_number,
)


def test_a_step_placeholder_is_replaced_by_that_steps_finding() -> None:
    filled = fill_placeholders("Where was {{step_1}} born?", {1: "Ada Lovelace"})
    assert filled.text == "Where was Ada Lovelace born?"
    assert filled.used == (1,)
    assert filled.missing == ()


def test_several_placeholders_and_spacing_variants_are_filled() -> None:
    filled = fill_placeholders(
        "{{ step_2 }} and {{step1}} vs {{Step-2}}", {1: "Zilliz", 2: "Milvus"}
    )
    assert filled.text == "Milvus and Zilliz vs Milvus"
    assert filled.used == (2, 1)


def test_a_step_without_finding_yet_is_removed_and_reported() -> None:
    filled = fill_placeholders("Who founded {{step_3}} company", {1: "x"})
    assert filled.text == "Who founded company"
    assert filled.missing == ("step_3",)
    assert "{" not in filled.text


def test_unknown_placeholder_names_never_reach_the_search() -> None:
    filled = fill_placeholders("capital of {{country}} {{}} {{step_1}}", {1: "France"})
    assert filled.text == "capital of France"
    assert filled.missing == ("country", "{{}}")


def test_stray_braces_are_stripped() -> None:
    assert fill_placeholders("a {{step_1 b", {}).text == "a step_1 b"
    assert fill_placeholders("a }}b", {}).text == "a b"


def test_long_findings_are_cut_to_their_first_sentence() -> None:
    finding = "The author is Jane Austen. She wrote six novels and lived in Bath for years."
    assert short_finding(finding) == "The author is Jane Austen"
    assert len(short_finding("word " * 200)) <= 160


def test_names_and_step_numbers_are_read() -> None:
    assert placeholder_names("{{step_1}} x {{ foo }}") == ["step_1", "foo"]
    assert step_number("step_12") == 12
    assert step_number("steps") is None
