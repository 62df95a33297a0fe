"""A report sentence cites the passages its names and numbers come from."""

from scripted import MemoryLibrary, ScriptedModel, collect, make_chunk, verdicts

from app.core.events import Finished, Notice
from app.research.citations import sentences
from app.research.engine import ResearchEngine
from app.research.name_citations import cite_names

JOURNAL = (
    "The Journal of Psychotherapy Integration is a peer-reviewed academic journal published by the "
    "American Psychological Association on behalf of the Society for the Exploration of Psychotherapy Integration."
)
HALL = (
    "Stanley Hall's Adolescence in 1904. Hall, who was the first president of the American Psychological "
    "Association, viewed adolescence primarily as a time of internal turmoil and upheaval."
)
PUBLIX = "Publix operates 787 stores in Florida, more than in any other state."
RAPPER = "Signmark is a Finnish rapper, the first deaf artist signed to a major label."
SOURCES = [(1, JOURNAL), (2, HALL), (3, PUBLIX), (4, RAPPER)]


def test_a_sentence_joining_two_links_cites_both() -> None:
    text = (
        "The first president of the association that publishes the Journal of Psychotherapy Integration "
        "was Stanley Hall [1]."
    )
    assert cite_names(text, SOURCES) == (text[:-4] + "[1, 2].", 1)


def test_a_sentence_whose_names_its_citation_holds_is_left_alone() -> None:
    text = "Stanley Hall was the first president of the American Psychological Association [2]."
    assert cite_names(text, SOURCES) == (text, 0)


def test_an_uncited_sentence_is_cited_only_when_every_name_and_number_is_found() -> None:
    found = "There are 787 Publix stores in Florida."
    assert cite_names(found, SOURCES) == ("There are 787 Publix stores in Florida [3].", 1)
    hedge = "The documents do not say how many Publix stores Georgia has."
    assert cite_names(hedge, SOURCES) == (hedge, 0)


def test_a_name_no_passage_holds_stays_uncited_and_missing() -> None:
    text = "Kenji Fujimori was the first president of the American Psychological Association [2]."
    assert cite_names(text, SOURCES) == (text, 0)


def test_the_first_of_equally_good_passages_is_cited() -> None:
    again = (5, "Publix, a chain of 787 stores in Florida, is owned by its employees.")
    text = "Publix has 787 stores in Florida and its first president was Stanley Hall [2]."
    assert cite_names(text, [again, *SOURCES]) == (text[:-4] + "[2, 5].", 1)
    assert cite_names(text, [*SOURCES, again]) == (text[:-4] + "[2, 3].", 1)


def test_at_most_two_passages_are_added_and_questions_are_not_cited() -> None:
    text = "Signmark, Publix and Stanley Hall are in the Journal of Psychotherapy Integration."
    cited, added = cite_names(text, SOURCES)
    assert (
        added == 0
    )  # four passages would be needed: an uncited sentence not all found stays uncited
    assert cited == text
    question = "Was Stanley Hall the first president [1]?"
    assert cite_names(question, SOURCES) == (question, 0)


def test_a_citation_to_a_passage_the_writer_was_not_shown_is_left_alone() -> None:
    text = "Stanley Hall led the association [9]."
    assert cite_names(text, SOURCES) == (text, 0)


async def test_a_deep_report_cites_the_passage_its_answers_name_comes_from() -> None:
    # the writer cites Hall's passage only; the journal it names is in another
    chunks = [
        make_chunk("journal", JOURNAL),
        make_chunk("hall", HALL),
        make_chunk("rapper", RAPPER),
    ]
    question = "Who was the first president of the association that publishes the Journal of Psychotherapy Integration?"
    script = {
        "decompose": {"sub_queries": ["Journal of Psychotherapy Integration publisher president"]},
        "judge": {"relevant": [1, 2]},
        "reflect": {"done": True, "summary": "", "gap_queries": []},
        "citation_check": verdicts(),
    }
    # the search finds Hall's passage first (evidence 1); most of the sentence's words are in
    # it, so no citation is added for words alone, but the journal's name is not
    hall_only = (
        "Hall, the first president of the American Psychological Association, viewed adolescence as a time "
        "of turmoil; the association publishes the Journal of Psychotherapy Integration [1]."
    )
    model = ScriptedModel(script, text=hall_only)
    events = await collect(
        ResearchEngine(model, MemoryLibrary(chunks)).run(
            question, options={"findings": False, "bridge_queries": False}
        )
    )
    final = events[-1]
    assert isinstance(final, Finished), final
    by_chunk = {e.chunk_id: e.number for e in final.report.evidence}
    sentence = next(s for s in sentences(final.report.markdown) if "Hall" in s.text)
    assert set(sentence.numbers) == {by_chunk["journal"], by_chunk["hall"]}
    assert "⚠" not in sentence.text and "not supported" not in final.report.markdown
    assert any(isinstance(e, Notice) and "names come from" in e.message for e in events)
