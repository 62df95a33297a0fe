"""The writer's findings step (option ``findings``): ONE structured call binds each
helpful passage to the fact it gives and reads the short answer from those facts;
the report writer then reads the findings, fenced, instead of the passages. Control
flow with a scripted model; the step is measured on MuSiQue with a real model
(``bench_musique.py --findings``)."""

from __future__ import annotations

from typing import Any

from scripted import MILVUS_CHUNKS, MemoryLibrary, ScriptedModel, collect, make_chunk, verdicts

from app.core.events import Finished, Notice
from app.research.engine import ResearchEngine

QUESTION = "What is Milvus?"
OPTIONS = {"findings": True, "short_answer": True}


def base_script(findings: Any) -> dict[str, Any]:
    return {
        "decompose": {"sub_queries": ["Milvus vector database"]},
        "judge": {"relevant": [1, 2]},
        "reflect": {"done": True, "summary": "", "gap_queries": []},
        "findings": findings,
        "citation_check": verdicts(),
    }


async def test_the_answer_rests_on_picked_passages_quoted_under_the_report() -> None:
    def findings(messages: list[Any], schema: dict[str, Any]) -> Any:
        shown = schema["properties"]["sources"]["items"]["enum"]
        assert len(shown) >= 2 and "<document" in messages[-1]["content"]  # the passages, fenced
        return {"sources": [shown[1], 999, shown[1]]}  # 999: not shown; a repeat counts once

    script = {**base_script(findings), "short_answer": {"answer": "a vector database"}}
    model = ScriptedModel(script, text="Milvus is a vector database [2].")
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, options=OPTIONS)
    )
    final = events[-1]
    assert isinstance(final, Finished)
    writer = [c for c in model.calls if c.kind != "structured"][-1].messages[-1]["content"]
    assert writer.count('<document id="') == 1  # only the picked passage, quoted
    body = final.report.markdown.split("## Sources")[0]
    quotes = [line for line in body.splitlines() if line.startswith("> “")]
    assert len(quotes) == 1 and quotes[0].endswith("” [1]")  # cited first: number 1
    quoted = quotes[0][3:].rsplit("”", 1)[0]
    source = next(e for e in final.report.evidence if e.number == 1)
    assert quoted.split(" … ")[0] in " ".join(source.quote.split())  # the document's own words
    # the short answer reads the report and the passages it cites (the quoted one first)
    assert final.report.answer == "a vector database"
    assert list(final.report.answer_from)[:1] == [1]
    answer_prompt = next(c for c in model.calls if c.task == "short_answer").messages[-1]["content"]
    assert quoted.split(" … ")[0][:40] in answer_prompt
    # quotes are not claims: the check reads the report's own sentence only
    assert {c.sentence for c in final.report.citations} == {"Milvus is a vector database."}


async def test_an_unusable_findings_reply_falls_back_to_the_passages() -> None:
    script = {**base_script({"sources": []}), "short_answer": {"answer": "a database"}}
    model = ScriptedModel(script, text="Milvus is a vector database [1].")
    events = await collect(
        ResearchEngine(model, MemoryLibrary(list(MILVUS_CHUNKS))).run(QUESTION, options=OPTIONS)
    )
    final = events[-1]
    assert isinstance(final, Finished)
    writer = [c for c in model.calls if c.kind != "structured"][-1].messages[-1]["content"]
    assert writer.count("<document") >= 2  # the passages themselves
    assert final.report.answer == "a database"
    assert not [e for e in events if isinstance(e, Notice) and e.level == "error"]


async def test_a_picked_passage_nothing_ties_to_the_answer_is_consulted_not_quoted() -> None:
    chunks = [
        make_chunk(
            "milvus",
            "Milvus is an open-source vector database built for similarity search at scale.",
        ),
        make_chunk(
            "generic", "A vector database stores embeddings and answers similarity search queries."
        ),
    ]
    script = {**base_script({"sources": [1, 2]}), "judge": {"relevant": [1, 2]}}
    script["short_answer"] = {"answer": "an open-source vector database"}
    model = ScriptedModel(script, text="It is a database for similarity search.")
    events = await collect(
        ResearchEngine(model, MemoryLibrary(chunks)).run(QUESTION, options=OPTIONS)
    )
    final = events[-1]
    assert isinstance(final, Finished), final
    body = final.report.markdown.split("## Sources")[0]
    quotes = [line for line in body.splitlines() if line.startswith("> “")]
    assert (
        len(quotes) == 1 and "Milvus is an open-source" in quotes[0]
    )  # it names what the question asks about
    by_chunk = {e.chunk_id: e.number for e in final.report.evidence}
    assert set(by_chunk) == {
        "milvus",
        "generic",
    }  # the other is kept as evidence, listed under no citation
    assert f"[{by_chunk['generic']}]" not in final.report.markdown
    assert any(isinstance(e, Notice) and "Quoted 1 of the 2" in e.message for e in events)
    # the short answer read both picks, as the writer did
    answer_prompt = next(c for c in model.calls if c.task == "short_answer").messages[-1]["content"]
    assert "stores embeddings" in answer_prompt


async def test_the_sentence_stating_the_answer_cites_the_chain_it_rests_on() -> None:
    import dataclasses
    import re

    journal = dataclasses.replace(
        make_chunk(
            "journal",
            "The Journal of Psychotherapy Integration is a peer-reviewed academic journal "
            "published by the American Psychological Association.",
        ),
        title="Journal of Psychotherapy Integration",
    )
    hall = dataclasses.replace(
        make_chunk(
            "hall",
            "Stanley Hall, the first president of the American Psychological Association, "
            "viewed adolescence as a time of turmoil.",
        ),
        title="Adolescence",
    )
    rapper = make_chunk("rapper", "Signmark is a Finnish rapper, the first deaf artist signed.")
    question = (
        "Who was the first president of the association that publishes the "
        "Journal of Psychotherapy Integration?"
    )

    def write(messages: list[Any], schema: Any) -> str:
        # the writer cites the passage it took the name from, not the link that leads there
        prompt = messages[-1]["content"]
        number = re.search(r'<document id="(\d+)"[^>]*>[^<]*Stanley Hall', prompt)
        assert number, prompt
        return f"The association's first president was Stanley Hall [{number.group(1)}]."

    script = {**base_script({"sources": [1, 2, 3]}), "judge": {"relevant": [1, 2, 3]}}
    script["short_answer"] = {"answer": "Stanley Hall"}
    model = ScriptedModel(script, text=write)
    events = await collect(
        ResearchEngine(model, MemoryLibrary([rapper, journal, hall])).run(
            question, options={**OPTIONS, "bridge_queries": False}
        )
    )
    final = events[-1]
    assert isinstance(final, Finished), final
    by_chunk = {e.chunk_id: e.number for e in final.report.evidence}
    prose = final.report.markdown.split("### What the sources say")[0]
    cited = {int(n) for n in re.findall(r"\d+", prose.split("Stanley Hall", 1)[1])}
    # the answer's sentence now cites the journal's passage too: the chain's first link
    assert cited == {by_chunk["journal"], by_chunk["hall"]}, final.report.markdown
    quotes = [line for line in final.report.markdown.splitlines() if line.startswith("> “")]
    assert len(quotes) == 2 and not any("Signmark" in q for q in quotes)
    added = [c for c in final.report.citations if c.number == by_chunk["journal"]]
    assert added and all(c.supported for c in added)
    assert any(isinstance(e, Notice) and "sentence(s) stating it" in e.message for e in events)


async def test_deep_asks_the_writer_to_cite_a_whole_chain_and_quick_does_not() -> None:
    """Deep's rounds find a chain hop by hop: its writer is told a sentence cites every
    passage of the chain it follows; quick's writer is not (a 0.5B writer then lists
    titles instead of answering, README's *Measured*)."""
    systems = {}
    for mode in ("deep", "quick"):

        def findings(messages: list[Any], schema: dict[str, Any]) -> Any:
            return {"sources": schema["properties"]["sources"]["items"]["enum"][:2]}

        model = ScriptedModel(base_script(findings), text="Milvus is a vector database [1].")
        library = MemoryLibrary(list(MILVUS_CHUNKS))
        events = await collect(ResearchEngine(model, library).run(QUESTION, mode=mode))
        assert isinstance(events[-1], Finished)
        writer = [c for c in model.calls if c.kind != "structured"][-1].messages[0]["content"]
        systems[mode] = writer
    assert "cites every passage of the chain" in systems["deep"]
    assert "chain" not in systems["quick"]
