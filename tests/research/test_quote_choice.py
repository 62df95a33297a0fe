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
    4,
    "Person-centered therapy",
    "Person-centered therapy is a form of psychotherapy developed by Carl Rogers.",
)
PICKED = [PARK, JOURNAL, THERAPY, HALL]


def test_the_questions_names_are_found() -> None:
    assert question_names(QUESTION) == ("Journal of Psychotherapy Integration",)


def test_a_passage_about_what_the_question_names_is_quoted_and_near_misses_are_not() -> None:
    assert rested_on(QUESTION, PICKED, cited=set()) == [1]


def test_a_passage_the_report_cites_or_that_holds_the_answer_is_quoted() -> None:
    assert rested_on(QUESTION, PICKED, cited={2}) == [1, 2]
    assert rested_on(QUESTION, PICKED, cited=set(), answer="Hall") == [1, 2]
    assert rested_on(QUESTION, PICKED, cited=set(), answer="hall.") == [
        1,
        2,
    ]  # case and a full stop aside
    assert rested_on(QUESTION, PICKED, cited=set(), answer="Hal") == [
        1
    ]  # a whole word, not a piece of one


def test_a_short_answer_is_not_looked_for() -> None:
    assert rested_on(QUESTION, PICKED, cited=set(), answer="a") == [1]


def test_the_pick_stands_when_nothing_ties_a_passage_to_the_answer() -> None:
    nameless = "who was the first president of the association that publishes the journal?"
    assert rested_on(nameless, PICKED, cited=set()) == [3, 1, 4, 2]


def test_a_passage_holding_only_the_questions_broader_name_is_not_quoted() -> None:
    question = "Which county borders the county in which Johnnycake, West Virginia is located?"
    johnnycake = Picked(
        1,
        "Johnnycake, West Virginia",
        "Johnnycake is a community in McDowell County, West Virginia.",
    )
    state = Picked(2, "Virginia", "Virginia is bordered by West Virginia to the north and west.")
    another = Picked(
        3, "Good, West Virginia", "Good is a community in Hampshire County, West Virginia."
    )
    assert question_names(question) == ("Johnnycake", "West Virginia")
    assert rested_on(question, [state, johnnycake, another], cited=set()) == [1]
    # the broader name still counts where no passage holds a narrower one
    assert rested_on(question, [state, another], cited=set()) == [2, 3]
