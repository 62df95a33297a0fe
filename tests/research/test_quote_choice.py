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
    # the broader name still counts where no passage holds a narrower one, and of those
    # that hold it, the one whose title holds it is about it ("Virginia" is not)
    assert rested_on(question, [state, another], cited=set()) == [3]


BRAND = "What country was the author of Brand a citizen of?"
PLAY = Picked(1, "Brand (play)", "Brand is a verse tragedy in five acts by Henrik Ibsen.")
IBSEN = Picked(2, "Henrik Ibsen", "Henrik Ibsen was a Norwegian playwright, born in Skien, Norway.")
ADVERT = Picked(3, "Advertising", "A Brand manager tends the image of a product in Norway.")
SHOES = Picked(4, "Nike", "Nike is an American maker of shoes.")


def test_a_passage_about_the_subject_starts_the_chain_not_one_naming_it_in_passing() -> None:
    assert rested_on(BRAND, [ADVERT, PLAY, SHOES], cited=set()) == [1]
    # no passage about it: every one that names it
    assert rested_on(BRAND, [ADVERT, SHOES], cited=set()) == [3]


def test_a_cited_or_answering_passage_is_quoted_only_when_tied_to_the_chain() -> None:
    # the play names Ibsen, Ibsen's passage holds the answer: both links quoted
    assert rested_on(BRAND, [SHOES, PLAY, IBSEN, ADVERT], cited=set(), answer="Norway") == [1, 2]
    # the advert holds "Norway" too, but is tied to nothing kept
    assert rested_on(BRAND, [ADVERT, PLAY], cited=set(), answer="Norway") == [1]
    # cited by an unflagged sentence but unrelated to the subject's passage: not quoted
    assert rested_on(BRAND, [SHOES, PLAY, IBSEN], cited={4, 2}) == [1, 2]


def test_passages_sharing_a_name_the_question_does_not_hold_are_tied() -> None:
    # the journal's passage and Hall's share "American Psychological Association"
    assert rested_on(QUESTION, [PARK, JOURNAL, HALL], cited={2, 3}) == [1, 2]
    # a part of the question's own name ("Kenji" of "Akinoshu Kenji") ties nothing
    question = "What kind of plane dropped the bomb on Akinoshu Kenji's birthplace?"
    wrestler = Picked(1, "Akinoshu Kenji", "Akinoshu Kenji is a sumo wrestler born in Hiroshima.")
    other = Picked(2, "Kenji Fujimori", "Kenji Fujimori is a Peruvian politician.")
    assert rested_on(question, [wrestler, other], cited={2}) == [1]


def test_an_answer_the_question_holds_marks_no_link() -> None:
    question = "What currency predated the Euro in the country Signmark is from?"
    signmark = Picked(1, "Signmark", "Signmark is a Finnish rapper.")
    greece = Picked(2, "Greece", "Greece adopted the Euro in 2001.")
    assert rested_on(question, [signmark, greece], cited=set(), answer="Euro") == [1]


def test_a_flagged_sentence_is_no_ground_to_quote_what_it_cites() -> None:
    nameless = "who was the first president of the association that publishes the journal?"
    # cited only by a flagged sentence: not quoted where something else is
    assert rested_on(nameless, PICKED, cited={2}, cited_flagged={2, 3}) == [2]
    # nothing else: what the flagged sentences cite, before the whole pick
    assert rested_on(nameless, PICKED, cited=set(), cited_flagged={3}) == [3]


def test_the_passage_the_subjects_passage_names_by_title_is_the_next_link() -> None:
    question = "What kind of university did the author of Alexander and the Terrible Day attend?"
    book = Picked(
        1,
        "Alexander and the Terrible Day",
        "Alexander and the Terrible Day is a children's book written by Judith Viorst.",
    )
    author = Picked(2, "Judith Viorst", "Viorst is a 1952 graduate of Rutgers University.")
    berkeley = Picked(
        3, "Seth Roberts", "Roberts taught at the University of California, Berkeley."
    )
    picked = [book, berkeley, author]
    # neither cited nor holding the (wrong) short answer, the author's passage is still
    # the chain's next link; the passage the wrong answer came from is not
    assert rested_on(question, picked, cited={3}, answer="University of California") == [1, 2]
    # only by the start: a passage named by a passage off the chain is not
    off = Picked(4, "Rutgers University", "Rutgers is a public research university.")
    assert rested_on(question, [book, off], cited=set()) == [1]
