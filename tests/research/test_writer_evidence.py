"""The report writer's evidence order (app.research.writer_evidence): the multi-hop
chain first, numbers kept, the rest in the usual spread order."""

from __future__ import annotations

from app.core.models import Chunk, Hit
from app.research.evidence import EvidenceRegistry
from app.research.writer_evidence import (
    Passage,
    chain,
    chain_focus,
    linked,
    writer_numbers,
    writer_order,
)

QUESTION = "Who is the spouse of the Green performer?"
GREEN = Passage(
    3,
    "Green (Steve Hillage album)",
    "Green is the fourth studio album by Steve Hillage, from 1978.",
)
HILLAGE = Passage(
    7, "Steve Hillage", "Steve Hillage is an English guitarist. He married Miquette Giraudy."
)
GIRAUDY = Passage(8, "Miquette Giraudy", "Miquette Giraudy is a French keyboard player and singer.")
NOISE = [
    Passage(n, f"Noise {n}", f"Unrelated passage number {n} about green tea and spouses.")
    for n in (1, 2, 4)
]


def test_a_passage_is_linked_to_another_that_names_its_title() -> None:
    assert linked(GREEN, HILLAGE)  # "by Steve Hillage" names the next passage
    assert linked(HILLAGE, GIRAUDY)
    assert not linked(GREEN, GIRAUDY)
    # a title's "(…)" is not part of the name, and a name must match whole words
    assert linked(Passage(1, "Green (colour)", "x"), Passage(2, "y", "Green is a colour."))
    assert not linked(Passage(1, "Green", "x"), Passage(2, "y", "Greenland is an island."))


def test_the_chain_starts_nearest_the_question_and_follows_the_names() -> None:
    passages = [*NOISE, GIRAUDY, HILLAGE, GREEN]  # found in the "wrong" order
    assert chain(QUESTION, passages) == [3, 7, 8]
    assert chain(QUESTION, passages, max_links=2) == [3, 7]
    assert chain(QUESTION, []) == []


def test_the_writer_reads_the_chain_first_then_the_spread() -> None:
    passages = [*NOISE, GIRAUDY, HILLAGE, GREEN]
    spread = [1, 2, 4, 7, 8]  # what the round-robin pick would show, in order
    assert writer_order(QUESTION, passages, spread, limit=5) == [3, 7, 8, 1, 2]
    assert writer_order(QUESTION, passages, spread, limit=2) == [3, 7]
    assert writer_order(QUESTION, passages, spread, limit=0) == []
    # no chain (nothing names anything else): the spread as it was
    assert writer_order(QUESTION, [*NOISE, GREEN], [1, 2, 3], limit=3) == [1, 2, 3]


def test_each_link_keeps_the_words_that_name_its_neighbours() -> None:
    passages = [*NOISE, GIRAUDY, HILLAGE, GREEN]
    assert chain_focus(3, passages, [3, 7, 8]) == "steve hillage"
    assert set(chain_focus(7, passages, [3, 7, 8]).split()) == {"green", "miquette", "giraudy"}
    assert chain_focus(1, passages, [3, 7, 8]) == ""


def test_writer_numbers_reads_the_registry_and_keeps_evidence_numbers() -> None:
    evidence = EvidenceRegistry()
    for passage, query in [
        (NOISE[0], "q1"),
        (GIRAUDY, "q1"),
        (NOISE[1], "q2"),
        (HILLAGE, "q2"),
        (GREEN, "q3"),
    ]:
        chunk = Chunk(
            chunk_id=f"c{passage.number}",
            doc_id="d",
            collection="c",
            path=f"{passage.number}.md",
            text=passage.text,
            title=passage.title,
        )
        evidence.add(chunk, query)
    numbers = {
        passage.number: evidence.number_of(f"c{passage.number}")
        for passage in [GREEN, HILLAGE, GIRAUDY]
    }
    chosen = writer_numbers(QUESTION, evidence, limit=4)
    assert chosen[:3] == [numbers[3], numbers[7], numbers[8]]
    assert len(chosen) == 4 and len(set(chosen)) == 4


def test_after_the_chain_the_writer_reads_what_the_searches_ranked_highest() -> None:
    passages = [*NOISE, GIRAUDY, HILLAGE, GREEN]
    standing = {1: 0.2, 2: 1.5, 4: 1.0, 3: 0.5, 7: 0.3, 8: 0.1}
    assert writer_order(QUESTION, passages, [1, 2, 4], limit=5, standing=standing) == [
        3,
        7,
        8,
        2,
        4,
    ]
    # without a chain: by standing alone, ties in spread order
    no_chain = [*NOISE]
    assert writer_order(
        QUESTION, no_chain, [4, 1, 2], limit=3, standing={1: 1.0, 2: 1.0, 4: 1.0}
    ) == [4, 1, 2]
    assert writer_order(QUESTION, no_chain, [4, 1, 2], limit=2, standing={1: 0.5, 2: 2.0}) == [2, 1]


def test_a_chunk_that_several_searches_rank_high_stands_highest() -> None:
    evidence = EvidenceRegistry()
    chunks = [
        Chunk(chunk_id=f"c{i}", doc_id="d", collection="c", path=f"{i}.md", text=f"text {i}")
        for i in range(4)
    ]
    for chunk in chunks:
        evidence.add(chunk, "q")
    evidence.note_ranks(
        [Hit(chunk=chunks[0], score=1.0), Hit(chunk=chunks[1], score=0.9)]
    )  # 1, 1/2
    evidence.note_ranks(
        [Hit(chunk=chunks[2], score=1.0), Hit(chunk=chunks[1], score=0.9)]
    )  # 1, 1/2
    standing = [evidence.standing(n) for n in evidence.numbers()]
    assert standing == [1.0, 1.0, 1.0, 0.0]
    evidence.note_ranks([Hit(chunk=chunks[1], score=1.0)])
    assert evidence.standing(evidence.number_of("c1") or 0) == 2.0
    assert writer_numbers("text", evidence, limit=2)[0] == evidence.number_of("c1")
