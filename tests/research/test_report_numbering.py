"""Every sentence cited or flagged, and sources numbered as they are cited.

Pure functions first (sentence counts, the uncited mark, renumbering), then a
deep run with a scripted model: its report's Sources names only what the text
cites, once each, numbered 1, 2, … in order of first citation, in the text, the
evidence and the checked citations alike; the evidence read but not cited
follows, outside the text.
"""

from __future__ import annotations

import re

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, verdicts

from app.core.events import EvidenceAdded, Finished
from app.core.models import Citation, Evidence, SentenceSupport
from app.research.citations import (
    cited_numbers,
    first_cited,
    mark_uncited,
    renumber,
    sentence_support,
    split_report,
    support_headline,
)
from app.research.engine import ResearchEngine
from app.research.report import finish_report

REPORT = """Hybrid search uses BM25 [7]. Milvus is open source [3].

| name | value [5] |
|---|---|

- A list item with no source.
- Another item [3].

```
code [9] is not a sentence.
```

Nothing backs this one.

## Sources

- [3] one
- [7] two

## Open questions

- None noted.
"""


def test_sentences_of_the_text_are_counted_not_the_engines_sections() -> None:
    support = sentence_support(REPORT)
    # four sentences and two list items; the table, the code and Sources/Open questions are not sentences
    assert support == SentenceSupport(sentences=5, cited=3, flagged=0)
    # nothing independent of the writer checked it: never "0 flagged"
    assert support_headline(support) == "3 of 5 sentences cited, not verified"
    assert support_headline(SentenceSupport(1, 1, 0)) == "1 of 1 sentence cited, not verified"
    checked = sentence_support(REPORT, checked_by="word and meaning overlap")
    assert support_headline(checked) == (
        "3 of 5 sentences supported, 0 flagged, 2 cite no source (checked by word and meaning overlap)"
    )
    assert support_headline(SentenceSupport(9, 9, 2, "word and meaning overlap")) == (
        "7 of 9 sentences supported, 2 flagged (checked by word and meaning overlap)"
    )
    assert sentence_support("") == SentenceSupport(0, 0, 0) and SentenceSupport().share == 0.0


def test_a_flagged_sentence_counts_once_from_its_mark_or_from_the_check() -> None:
    text = "Milvus is fast [1]. ⚠ *(not supported by [1])* Milvus is open source [2].\n"
    assert sentence_support(text) == SentenceSupport(sentences=2, cited=2, flagged=1)
    # the same report before it was flagged, with the check's result
    plain = "Milvus is fast [1]. Milvus is open source [2].\n"
    bad = [
        Citation(1, "Milvus is fast.", False, "unsupported"),
        Citation(2, "Milvus is open source.", True),
    ]
    assert sentence_support(plain, bad) == SentenceSupport(sentences=2, cited=2, flagged=1)
    # a citation judged unsupported for another number does not flag the sentence
    assert sentence_support(plain, [Citation(3, "Milvus is fast.", False)]).flagged == 0


def test_uncited_sentences_of_the_text_are_marked_and_nothing_else() -> None:
    marked = mark_uncited(REPORT, "‹?›")
    assert "- A list item with no source. ‹?›" in marked
    assert "Nothing backs this one. ‹?›" in marked
    assert (
        marked.count("‹?›") == 2
    )  # not the cited ones, not the code, not Sources or Open questions
    assert "- None noted.\n" in marked and marked.endswith("- None noted.\n")
    assert mark_uncited(REPORT, "‹?›").replace(" ‹?›", "") == REPORT


def test_renumbering_follows_first_citation_and_leaves_code_alone() -> None:
    body, tail = split_report(REPORT)
    assert tail.startswith("## Sources") and "Nothing backs this one." in body
    assert first_cited(REPORT, [3, 5, 7, 8]) == [7, 3, 5]  # the table's citation counts; 9 is code
    text = renumber(body, [7, 3, 5, 8])
    assert text.startswith("Hybrid search uses BM25 [1]. Milvus is open source [2].")
    assert "| name | value [3] |" in text and "- Another item [2]." in text
    assert "code [9] is not a sentence." in text
    assert renumber("both [3, 7]", [7, 3]) == "both [2, 1]"


def _evidence(number: int) -> Evidence:
    return Evidence(
        number=number,
        chunk_id=f"c{number}",
        subquery="q",
        quote=f"quote {number}",
        path=f"/d/{number}.md",
    )


def test_finish_report_lists_cited_sources_once_in_order_and_keeps_the_rest_after() -> None:
    text = "B is true [4]. A is true [2]. B again [4]. Unsourced."
    checked = [Citation(4, "B is true.", True), Citation(2, "A is true.", False, "unsupported")]
    markdown, evidence, citations, support = finish_report(
        text, [_evidence(n) for n in (1, 2, 3, 4)], checked, ["None noted."]
    )
    body, tail = split_report(markdown)
    assert body.startswith("B is true [1]. A is true [2]. B again [1].")
    assert re.findall(r"^- \[(\d+)\] (\S+)", tail, re.M) == [("1", "/d/4.md"), ("2", "/d/2.md")]
    # the evidence read but not cited follows, numbered after the cited, in its order
    assert [(e.number, e.chunk_id) for e in evidence] == [
        (1, "c4"),
        (2, "c2"),
        (3, "c1"),
        (4, "c3"),
    ]
    assert [(c.number, c.sentence) for c in citations] == [(1, "B is true."), (2, "A is true.")]
    assert support == SentenceSupport(sentences=4, cited=3, flagged=1)
    assert "## Open questions\n\n- None noted.\n" in markdown


def test_finish_report_with_nothing_cited_lists_no_source() -> None:
    markdown, evidence, _, support = finish_report("Nothing here.", [_evidence(1)], [], [])
    assert "## Sources\n\nNo source is cited." in markdown
    assert [e.number for e in evidence] == [1]
    assert support == SentenceSupport(1, 0, 0)


async def test_a_deep_run_numbers_its_sources_as_its_report_cites_them() -> None:
    question = "What is Milvus and how does it compare with other vector databases?"
    # the second chunk found (c1) is cited first; the second sentence names what its source
    # (c3) does not; one sentence cites nothing
    text = (
        "Milvus is an open-source vector database built for similarity search [2]. "
        "Milvus scales to billions of vectors, as Oracle does [1]. "
        "Bananas grow in the tropics."
    )
    script = {
        "decompose": {"sub_queries": ["Milvus vector database features"]},
        "judge": {"relevant": [1, 2, 3]},
        "reflect": {"done": True, "summary": "enough", "gap_queries": []},
        "citation_check": verdicts("supported", "unsupported"),
    }
    model = ScriptedModel(script, text=text)
    events = await collect(
        # the report's own sentences only (no quoted passages: findings off)
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(
            question, options={"bridge_queries": False, "findings": False}
        )
    )
    final = events[-1]
    assert isinstance(final, Finished), final
    report = final.report
    added = {e.evidence.number: e.evidence.chunk_id for e in events if isinstance(e, EvidenceAdded)}
    assert len(added) >= 3
    body, tail = split_report(report.markdown)
    assert cited_numbers(body) == [1, 2]
    by_number = {e.number: e.chunk_id for e in report.evidence}
    assert by_number[1] == added[2] and by_number[2] == added[1]  # numbered as first cited
    assert sorted(by_number) == list(
        range(1, len(added) + 1)
    )  # every piece of evidence kept, renumbered
    listed = [int(n) for n in re.findall(r"^- \[(\d+)\]", tail, re.M)]
    assert listed == [1, 2]  # only the cited, once each
    assert {c.number for c in report.citations} == {1, 2}
    # the first sentence is firmly supported and the second rejected by the independent
    # check: the research model is asked about neither (its vote could change neither)
    assert not model.calls_for("citation_check")
    checked_by = "word and meaning overlap"
    assert report.support == sentence_support(report.markdown, report.citations, checked_by)
    assert report.support == SentenceSupport(sentences=3, cited=2, flagged=1, checked_by=checked_by)
    assert "⚠" in body
