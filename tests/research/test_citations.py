"""Citation handling on report text: resolution, binding, flagging, echo stripping.

Fencing itself is tested in tests/llm/test_fencing.py."""

from __future__ import annotations

from scripted import make_chunk

from app.core.models import Citation
from app.research.citation_check import check_messages
from app.research.citations import (
    bind_uncited,
    citation_pairs,
    cited_numbers,
    flag_unsupported,
    resolve_citations,
    sentences,
)
from app.research.evidence import EvidenceRegistry
from app.research.prompts import WITHHELD, ends_in_a_loop, strip_echo
from app.research.report import report_sources


def test_citations_to_nothing_are_removed_and_counted() -> None:
    text = "Alpha is big [1]. Beta is small [2, 7]. Gamma [9]. A link [1](http://x) stays."
    fixed, removed = resolve_citations(text, [1, 2])
    assert fixed == "Alpha is big [1]. Beta is small [2]. Gamma. A link [1](http://x) stays."
    assert removed == 2
    assert cited_numbers(fixed) == [1, 2]
    assert resolve_citations(text, [1, 2, 7, 9]) == (text, 0)


def test_sentences_skip_headings_code_and_tables() -> None:
    text = "# Title [3]\n\nOne [1]. Two [2]!\n\n- item three [1]\n```\ncode [4]\n```\n| a [5] |"
    found = sentences(text)
    assert [(s.claim, s.numbers) for s in found] == [
        ("One.", (1,)),
        ("Two!", (2,)),
        ("item three", (1,)),
    ]
    assert [(c.number, c.sentence) for c in citation_pairs(text)] == [
        (1, "One."),
        (2, "Two!"),
        (1, "item three"),
    ]


def test_uncited_sentences_that_restate_a_source_get_its_citation() -> None:
    sources = [
        (1, "Milvus stores vectors and supports HNSW indexes."),
        (2, "Bananas grow in the tropics."),
    ]
    text = "Milvus supports HNSW indexes for vectors. Bananas grow in tropics! Something else entirely here. Ok."
    bound, added = bind_uncited(text, sources)
    assert bound == (
        "Milvus supports HNSW indexes for vectors [1]. Bananas grow in tropics [2]! Something else entirely here. Ok."
    )
    assert added == 2
    # a sentence whose own citation covers it keeps it as it is
    assert bind_uncited("Milvus supports HNSW indexes [1].", sources) == (
        "Milvus supports HNSW indexes [1].",
        0,
    )
    # one that cites a source that does not state it also gets the one that does
    assert bind_uncited("Milvus supports HNSW indexes [2].", sources) == (
        "Milvus supports HNSW indexes [2, 1].",
        1,
    )


def test_a_claim_joining_two_links_of_a_chain_cites_both() -> None:
    sources = [
        (
            4,
            "Green is the fourth studio album by the English musician Steve Hillage, released in 1978.",
        ),
        (9, "Steve Hillage has long worked with his partner Miquette Giraudy."),
        (2, "Bananas grow in the tropics."),
    ]
    # neither passage alone holds most of the claim; the two together do
    joined = "The album Green, released in 1978, was recorded by Steve Hillage, whose partner is Miquette Giraudy."
    assert bind_uncited(joined, sources) == (joined[:-1] + " [4, 9].", 2)
    assert bind_uncited(joined[:-1] + " [9].", sources) == (joined[:-1] + " [9, 4].", 1)
    # a claim no pair of sources holds is left uncited
    assert bind_uncited("Paris hosted the Olympic games in summer.", sources)[1] == 0


def test_unsupported_claims_are_flagged_where_they_stand() -> None:
    text = "- Alpha is big [1]. Beta is small [2].\nGamma is [1, 2]."
    checked = [
        Citation(1, "Alpha is big.", True),
        Citation(2, "Beta is small.", False, "unsupported"),
        Citation(2, "Gamma is.", False, "contradicted"),
        Citation(1, "Gamma is.", None),
    ]
    flagged = flag_unsupported(text, checked)
    assert flagged == (
        "- Alpha is big [1]. Beta is small [2]. ⚠ *(not supported by [2])*\nGamma is [1, 2]. ⚠ *(not supported by [2])*"
    )


def test_echoed_prompt_structure_is_stripped_from_a_reply() -> None:
    reply = '<question>\nWhat?\n</question>\n\n<document id="1" title="t">\nMilvus is fast [1].\n</document>\n'
    assert strip_echo(reply) == "Milvus is fast [1]."
    assert strip_echo(f"{WITHHELD} Milvus is fast [1].") == "Milvus is fast [1]."
    # a reply cut off inside a fence tag it was echoing (seen with the starter model)
    assert (
        strip_echo('The answer is: Iron Maiden [1]. <document id="1" title="')
        == "The answer is: Iron Maiden [1]."
    )


def test_a_loop_within_a_sentence_is_said_once_and_tables_and_numbers_are_kept() -> None:
    looped = "It was released as 2.4.10.3.3.1." + "0." * 60 + "0 [1]. Then 2.5 came."
    assert strip_echo(looped) == "It was released as 2.4.10.3.3.1.0… [1]. Then 2.5 came."
    assert ends_in_a_loop("It was 1." + "0." * 16) and not ends_in_a_loop("It was 1." + "0." * 15)
    keep = (
        "| a | b | c | d | e | f | g | h | i | j | k | l | m |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n\n"
        "Contents ........................................ 3\n\n"
        "A budget of 100000000000000000000 vectors [2]. Ha ha ha ha ha ha."
    )
    assert strip_echo(keep) == keep
    assert not ends_in_a_loop(keep)


def test_questions_are_not_bound_to_sources() -> None:
    sources = [(1, "Milvus stores vectors and supports HNSW indexes.")]
    assert bind_uncited("Does Milvus support HNSW indexes for vectors?", sources)[1] == 0


def test_repeated_sentences_and_a_cut_off_repeat_are_dropped() -> None:
    reply = (
        "Milvus is a scalable vector database [3]. It is designed to optimize performance.\n\n"
        "Milvus is a scalable vector database [3]. It is designed to optimize performance. Mil"
    )
    assert (
        strip_echo(reply)
        == "Milvus is a scalable vector database [3]. It is designed to optimize performance."
    )
    keep = "- First point here is long enough.\n- Second point, also long enough.\n\n## Heading"
    assert strip_echo(keep) == keep


def test_the_report_writer_sees_every_sub_querys_best_evidence_first() -> None:
    evidence = EvidenceRegistry()
    for i in range(12):  # the first search found twelve passages…
        evidence.add(make_chunk(f"a{i}", f"text a{i}"), "first search")
    evidence.add(make_chunk("b0", "text b0"), "second hop")  # …a later hop found one more each
    evidence.add(make_chunk("c0", "text c0"), "third hop")
    c0, b0 = evidence.number_of("c0"), evidence.number_of("b0")
    chosen = [n for n, _ in report_sources("a question", evidence, limit=4)]
    assert chosen == [1, 2, b0, c0]  # in evidence order, the later hops' finds included
    assert [n for n, _ in report_sources("a question", evidence, limit=20)] == evidence.numbers()


def test_the_citation_check_shows_each_source_once_cut_to_the_claims() -> None:
    filler = " ".join(f"Unrelated sentence number {i} about the weather." for i in range(30))
    sources = {
        1: f"{filler} Milvus was released by Zilliz in 2019. {filler}",
        2: "Qdrant is written in Rust.",
    }
    citations = [
        Citation(number=1, sentence="Milvus was released in 2019."),
        Citation(number=2, sentence="Qdrant is written in Rust."),
        Citation(number=1, sentence="Zilliz released Milvus."),
    ]
    system, user = check_messages(citations, sources.__getitem__, prompt_chars=8000)
    prompt = user["content"]
    assert "3 verdicts" in system["content"]
    # each cited source appears once, though source 1 backs two claims
    assert prompt.count('<document id="S1"') == 1 and prompt.count('<document id="S2"') == 1
    assert "Milvus was released by Zilliz in 2019." in prompt
    assert (
        len(prompt) < len(sources[1]) // 2
    )  # cut to the sentences near its claims, not shown whole
    assert "Claim 1 (source S1): Milvus was released in 2019." in prompt
    assert "Claim 2 (source S2): Qdrant is written in Rust." in prompt
    assert "Claim 3 (source S1): Zilliz released Milvus." in prompt


def test_a_line_opened_by_its_passage_s_id_cites_it_at_its_end() -> None:
    from app.research.citations import citations_to_the_end

    text = "[1, 2] Hall was the first president.\n- [3] Leyton is in London\nSo, Hall [1].\n[4] Twice [4]."
    assert citations_to_the_end(text).splitlines() == [
        "Hall was the first president [1, 2].",
        "- Leyton is in London [3].",
        "So, Hall [1].",
        "[4] Twice [4].",  # a line that cites at its end too is left as written
    ]
