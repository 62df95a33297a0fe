"""The summary a small model writes under a table keeps none of what it echoed:
no second copy of the table, no prompt tags, no sentence of its instructions
(:func:`app.research.entity_table.tidy_summary`, :func:`tidy_table_report`)."""

from __future__ import annotations

from app.core.models import Report
from app.research.citations import sentence_support
from app.research.entity_table import tidy_summary, tidy_table_report

GUIDANCE = (
    'A table of index type was built from the documents:\n<document id="table">\n| index type | use |\n'
    "|---|---|\n| IVF_FLAT | speed [1] |\n</document>\nSummarise what the table shows and what it leaves empty."
)
SYSTEM = (
    "You write a short research report that answers the user's question using only the numbered documents. "
    "Every sentence that states a fact must end with the id of the document it comes from in square brackets, "
    "like [2], before the full stop."
)


def test_echoed_table_rows_tags_and_instructions_are_dropped_and_the_summary_kept() -> None:
    echoed = "\n".join(
        [
            "Summarise what the table shows and what it leaves empty.",
            "The table lists one index type, IVF_FLAT, used for speed [1].",
            "| index type | use |",
            "|---|---|",
            "| IVF_FLAT | speed [1] |",
            '<document id="table">',
            "```json",
            "Every sentence that states a fact must end with the id of the document it comes from.",
            "It leaves the memory use empty. You write a short research report that answers the user's question.",
        ]
    )
    tidied = tidy_summary(echoed, [GUIDANCE, SYSTEM])
    assert tidied.splitlines() == [
        "The table lists one index type, IVF_FLAT, used for speed [1].",
        "",
        "It leaves the memory use empty.",
    ]


def test_a_clean_summary_is_left_as_written() -> None:
    clean = "The table lists one index type, IVF_FLAT, used for speed [1].\n\nNo memory figures were found."
    assert tidy_summary(clean, [GUIDANCE, SYSTEM]) == clean


def test_the_report_keeps_its_table_once_and_its_counts_follow() -> None:
    table = "## Index type table\n\n| index type | use |\n|---|---|\n| IVF_FLAT | speed [1] |"
    body = (
        "Summarise what the table shows and what it leaves empty.\n\n"
        "| IVF_FLAT | speed [1] |\n\nIVF_FLAT is fast [1]."
    )
    markdown = (
        f"{table}\n\n{body}\n\n## Sources\n\n- [1] ivf.md\n\n## Open questions\n\n- None noted.\n"
    )
    report = Report(markdown=markdown, support=sentence_support(markdown, ()))
    tidied = tidy_table_report(report, len(table.splitlines()), [GUIDANCE, SYSTEM])
    assert tidied.markdown.startswith(table + "\n\nIVF_FLAT is fast [1].\n\n## Sources\n")
    assert tidied.markdown.count("| IVF_FLAT | speed [1] |") == 1
    assert "Summarise" not in tidied.markdown
    assert tidied.support == sentence_support(tidied.markdown, ())
    assert (
        tidy_table_report(tidied, len(table.splitlines()), [GUIDANCE, SYSTEM]) is tidied
    )  # nothing left to tidy


def test_planned_columns_never_repeat_the_entity_type_or_the_plan_schema() -> None:
    from app.research.entity_table import plan_columns

    # what the starter model planned for "Which index types does Milvus support…?"
    planned = ["indexTypes", "columns", "Use case", "use cases", "entity_type", "Memory"]
    assert plan_columns("indexTypes", planned, reserved=["entity_type", "columns", "queries"]) == [
        "Use case",
        "Memory",
    ]
    assert (
        plan_columns("index type", ["columns"], reserved=["columns"]) == []
    )  # the mode then uses "description"
