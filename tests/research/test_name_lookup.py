"""A name of the question that the first search missed is looked up on its own
(app/research/name_lookup.py): for real, a Milvus Lite library of one MuSiQue
question's paragraphs and the starter model, in quick mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.core.events import Finished, SubQueryPlanned
from app.core.models import Budget, Chunk, Hit, Scope
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.library import Library
from app.llm.llamacpp import LlamaCppModel
from app.research.answerability import NOT_ANSWERED, Found
from app.research.engine import ResearchEngine
from app.research.name_lookup import names_to_look_up, naming

QUESTION = "What currency predated the Euro in the country Signmark is from?"
BUDGET = Budget(max_rounds=1, max_subqueries=1, top_k=3, max_seconds=240, max_concurrent_calls=1)
OPTIONS = {"report_max_tokens": 120, "prompt_chars": 2500}


def test_the_names_to_look_up_are_those_nothing_found_holds() -> None:
    found = [Found("Euro", "The euro replaced the markka in Finland in 2002.")]
    assert names_to_look_up(QUESTION, found) == ["Signmark"]
    assert names_to_look_up(QUESTION, [*found, Found("Signmark", "A Finnish rapper.")]) == []
    # a possessive is looked up bare, and no more names than asked
    asked = "Which country did Hans Edler's band and Signmark both tour?"
    assert names_to_look_up(asked, found) == ["Hans Edler", "Signmark"]
    assert names_to_look_up(asked, found, limit=1) == ["Hans Edler"]


def test_only_hits_naming_it_as_written_are_kept() -> None:
    def hit(title: str, text: str) -> Hit:
        chunk = Chunk(chunk_id=title, doc_id=title, collection="c", path="", text=text, title=title)
        return Hit(chunk, 1.0)

    band = hit("Brother (song)", "Brother is a song by Pearl Jam.")
    sibling = hit("Family", "His brother was born in 1950.")
    other = hit("Pearl Jam", "The band recorded Brother in 1991.")
    brothers = hit("Brothers", "The Brothers Grimm.")
    assert naming([sibling, band, brothers, other], "Brother") == [band, other]
    assert naming([sibling, band, other], "Brother", keep=1) == [band]


@pytest.fixture(scope="module")
def library_paths(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AppPaths:
    """The question's 20 paragraphs in collection "all"; all but Signmark's in "without"."""
    questions = json.loads((shared_data / "musique" / "questions.json").read_text("utf-8"))
    question = next(q for q in questions if q["question"] == QUESTION)
    root = tmp_path_factory.mktemp("name-lookup")
    folders = {"all": root / "all", "without": root / "without"}
    for i, p in enumerate(question["paragraphs"]):
        for name, folder in folders.items():
            if name == "without" and p["title"] == "Signmark":
                continue
            folder.mkdir(exist_ok=True)
            text = f"# {p['title']}\n\n{p['paragraph_text']}\n"
            (folder / f"p{i:02d}.md").write_text(text, encoding="utf-8")
    paths = AppPaths(root / "config", root / "data", root / "cache").ensure()

    async def ingest() -> None:
        library = Library.open(Settings(), paths)
        try:
            for name, folder in folders.items():
                async for _ in library.ingest([folder], name, description="MuSiQue paragraphs"):
                    pass
        finally:
            await library.aclose()

    asyncio.run(ingest())
    return paths


async def run_quick(paths: AppPaths, llm: LlamaCppModel, collection: str) -> Finished:
    library = Library.open(Settings(), paths)
    try:
        [hits] = await library.search([QUESTION], collections=[collection], top_k=BUDGET.top_k)
        # what makes the lookup needed: the question's own search misses Signmark's page
        assert not any("Signmark" in h.chunk.text for h in hits)
        engine = ResearchEngine(llm, library)
        events = [
            e
            async for e in engine.run(
                QUESTION,
                mode="quick",
                scope=Scope((collection,)),
                budget=BUDGET,
                options=OPTIONS,
            )
        ]
    finally:
        await library.aclose()
    final = events[-1]
    assert isinstance(final, Finished), final
    planned = [(e.origin, e.text) for e in events if isinstance(e, SubQueryPlanned)]
    assert planned == [("original", QUESTION), ("name", "Signmark")]  # looked up either way
    return final


@pytest.mark.slow
async def test_quick_looks_up_the_name_its_search_missed(
    library_paths: AppPaths, starter_llm: LlamaCppModel
) -> None:
    final = await run_quick(library_paths, starter_llm, "all")
    assert any(e.quote.startswith("Signmark was one of") for e in final.report.evidence)
    assert NOT_ANSWERED not in final.report.markdown


@pytest.mark.slow
async def test_a_lookup_that_finds_nothing_naming_it_leaves_the_report_saying_so(
    library_paths: AppPaths, starter_llm: LlamaCppModel
) -> None:
    final = await run_quick(library_paths, starter_llm, "without")
    assert all("Signmark" not in e.quote for e in final.report.evidence)
    assert NOT_ANSWERED in final.report.markdown and "“Signmark”" in final.report.markdown
