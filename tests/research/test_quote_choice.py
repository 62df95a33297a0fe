"""Only the picked passages the answer rests on are quoted under the report."""

from app.research.quote_choice import Picked, question_names, rested_on

QUESTION = "Who was the first president of the association that publishes the Journal of Psychotherapy Integration?"
JOURNAL = Picked(
    1,
    "Journal of Psychotherapy Integration",
    "The Journal of Psychotherapy Integration is a peer-reviewed academic journal published by the "
    "American Psychological Association.",
)
HALL = Picked(
    2,
    "Adolescence",
    "Hall, who was the first president of the American Psychological Association, viewed adolescence "
    "primarily as a time of internal turmoil and upheaval.",
)
PARK = Picked(3, "Park Geun-hye", "Park was the first woman to be President of South Korea.")
THERAPY = Picked(
    4, "Person-centered therapy", "Person-centered therapy is a form of psychotherapy developed by Carl Rogers."
)
PICKED = [PARK, JOURNAL, THERAPY, HALL]


def test_the_questions_names_are_found() -> None:
    assert question_names(QUESTION) == ("Journal of Psychotherapy Integration",)


def test_a_passage_about_what_the_question_names_is_quoted_and_near_misses_are_not() -> None:
    assert rested_on(QUESTION, PICKED, cited=set()) == [1]


def test_a_passage_the_report_cites_or_that_holds_the_answer_is_quoted() -> None:
    assert rested_on(QUESTION, PICKED, cited={2}) == [1, 2]
    assert rested_on(QUESTION, PICKED, cited=set(), answer="Hall") == [1, 2]
    assert rested_on(QUESTION, PICKED, cited=set(), answer="hall.") == [1, 2]  # case and a full stop aside
    assert rested_on(QUESTION, PICKED, cited=set(), answer="Hal") == [1]  # a whole word, not a piece of one


def test_a_short_answer_is_not_looked_for() -> None:
    assert rested_on(QUESTION, PICKED, cited=set(), answer="a") == [1]


def test_the_pick_stands_when_nothing_ties_a_passage_to_the_answer() -> None:
    nameless = "who was the first president of the association that publishes the journal?"
    assert rested_on(nameless, PICKED, cited=set()) == [3, 1, 4, 2]
