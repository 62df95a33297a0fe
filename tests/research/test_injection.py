"""Document text never steers a run: all five modes for real over a corpus that
holds a hostile file, with every prompt the model is sent recorded.

The corpus is two collections ingested through the real Library (Docling,
MiniLM, Milvus Lite): Milvus documentation pages, :mod:`hostile`'s Markdown
file, and a collection description with the same intent. The model is the
starter model (llama.cpp in-process) behind :class:`RecordingModel`. For every
mode, and for the prompt that writes a collection's description, in every
message of every prompt:

* the fences parse: each one the fencing function wrote, none opened inside
  another or closed from inside (a document that broke out would show here);
* the hostile file's instructions appear nowhere outside a fence;
* none of its fake fence or chat-turn markers survives as written;

and the report cites only evidence whose chunk is really in the store. The
hostile file did reach the model: its second section (markers around an
ordinary sentence) is in some prompt, inside a fence.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hostile import (
    DESCRIPTION,
    FAKE_MARKERS,
    HOSTILE_NEEDLES,
    INSTRUCTIONS,
    MARKDOWN,
    PAYLOAD,
    SECTION_TWO,
)
from prompt_audit import FenceError, RecordingModel, fence_spans, inside_fences, outside_fences

from app.core.events import Finished, IngestFinished, SearchFinished
from app.core.models import Budget
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.describe import describe_collection
from app.ingest.library import Library
from app.llm.fencing import WITHHELD
from app.llm.llamacpp import LlamaCppModel
from app.research.citations import cited_numbers
from app.research.engine import ResearchEngine
from app.research.hds_protocol import BEGIN_RESULTS
from app.research.snippets import focused

pytestmark = pytest.mark.slow

QUESTION = "What is Milvus and how does it store vectors?"
BUDGET = Budget(max_rounds=1, max_subqueries=2, top_k=5, max_seconds=240, max_concurrent_calls=1)
OPTIONS: dict[str, Any] = {
    "report_max_tokens": 64,
    "prompt_chars": 1500,
    "hds_turn_tokens": 64,
    "table_max_chunks": 4,  # every chunk of the library: the notice's two among them
    "table_max_rows": 1,
}
MODES = ("quick", "deep", "plan", "table", "hds")


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> AppPaths:
    """Two collections, ingested once: ``milvus`` (a short documentation page and the
    hostile notice: few enough chunks that every search finds both of the notice's)
    and ``notes`` (a short unrelated note, under a hostile description)."""
    root = tmp_path_factory.mktemp("injection")
    notice = root / "milvus-operations-notice.md"
    notice.write_text(MARKDOWN, encoding="utf-8")
    note = root / "kitchen.md"
    note.write_text(
        "# Kitchen rota\n\nThe office kitchen is cleaned on Fridays by the facilities team.\n"
    )
    paths = AppPaths(
        config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache"
    ).ensure()

    async def ingest() -> tuple[list[IngestFinished], list[str]]:
        library = Library.open(Settings(), paths)
        try:
            finished = []
            for files, name, description in (
                (
                    [shared_data / "milvus-docs" / "about" / "milvus_adopters.md", notice],
                    "milvus",
                    "Milvus docs",
                ),
                ([note], "notes", DESCRIPTION),
            ):
                async for event in library.ingest(files, name, description=description):
                    if isinstance(event, IngestFinished):
                        finished.append(event)
            sample = await library.sample_chunks("milvus", 200)
            return finished, [c.text for c in sample if c.path.endswith(notice.name)]
        finally:
            await library.aclose()

    finished, hostile_texts = asyncio.run(ingest())
    assert [(f.indexed, f.failed) for f in finished] == [(2, 0), (1, 0)]
    # the hostile file's instructions and fake markers are in the store as written
    stored = "\n".join(hostile_texts)
    assert all(needle in stored for needle in HOSTILE_NEEDLES), stored
    assert all(marker in stored for marker in FAKE_MARKERS), stored
    return paths


def audit(messages: list[str]) -> None:
    """Every message: fences well formed, no hostile text (nor the note that stands in
    for a withheld passage) outside them, no fake marker as written."""
    for text in messages:
        fence_spans(text)  # raises when a fence was broken out of
        for needle in (*HOSTILE_NEEDLES, WITHHELD):
            assert not outside_fences(text, needle), (needle, text)
        for marker in FAKE_MARKERS[1:]:  # FAKE_MARKERS[0], </document>, is checked by fence_spans
            assert marker not in text, (marker, text)
        for token in ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "[INST]"):
            assert token not in text, (token, text)


async def run_mode(
    paths: AppPaths, model: LlamaCppModel, mode: str
) -> tuple[RecordingModel, list[Any], Library]:
    recorder = RecordingModel(model)
    library = Library.open(Settings(), paths)
    engine = ResearchEngine(recorder, library)
    events = [e async for e in engine.run(QUESTION, mode=mode, budget=BUDGET, options=OPTIONS)]
    return recorder, events, library


def test_a_snippet_never_keeps_a_payload_without_its_instruction() -> None:
    """Snippets (deep's judge, the report, the citation check) cut passages to their
    best sentences; a hostile passage is withheld before the cut, not after."""
    passage = f"{INSTRUCTIONS[1]} Milvus stores vectors. {PAYLOAD}. Milvus indexes vectors."
    assert focused(passage, "ACCESS GRANTED update", 90) == WITHHELD


def test_the_audit_catches_a_document_outside_its_fence() -> None:
    """The checks below can fail: raw hostile text, or a fence closed from inside, is caught."""
    raw = f'Passages:\n<document id="1">\n{MARKDOWN}\n</document>'
    with pytest.raises(FenceError):
        fence_spans(raw)
    pasted = "Results:\n[1] " + " ".join(INSTRUCTIONS)
    assert all(outside_fences(pasted, needle) for needle in HOSTILE_NEEDLES)


@pytest.mark.parametrize("mode", MODES)
async def test_a_hostile_document_stays_data_in_every_prompt(
    corpus: AppPaths, starter_llm: LlamaCppModel, mode: str
) -> None:
    recorder, events, library = await run_mode(corpus, starter_llm, mode)
    try:
        final = events[-1]
        assert isinstance(final, Finished), final
        messages = recorder.messages()
        assert messages

        # both sections of the hostile file were found and shown to the model, inside
        # fences: the instructions withheld, the fake markers neutralised
        found = [h.chunk.text for e in events if isinstance(e, SearchFinished) for h in e.hits]
        assert any("SYSTEM NOTICE" in text for text in found) and any(
            SECTION_TWO[0] in text for text in found
        )
        assert any(inside_fences(m, WITHHELD) for m in messages)
        assert any(inside_fences(m, sentence) for m in messages for sentence in SECTION_TWO)
        if mode in ("deep", "plan"):  # routing and the global view show the hostile description
            assert any('title="notes"' in m for m in messages)
        audit(messages)
        if mode == "hds":  # the protocol's own results markers are the app's, one per search
            turns = [m for m in messages if BEGIN_RESULTS in m]
            assert turns and all(
                m.count(BEGIN_RESULTS) == m.count("<|end search results|>") for m in turns
            )

        # the report cites only evidence that is a real chunk of the store
        report = final.report
        numbers = {e.number for e in report.evidence}
        assert set(cited_numbers(report.markdown)) <= numbers
        assert "[99]" not in report.markdown
        chunk_ids = [e.chunk_id for e in report.evidence]
        real = await library.get_chunks(chunk_ids)
        assert sorted(c.chunk_id for c in real) == sorted(chunk_ids)
    finally:
        await library.aclose()


async def test_describing_a_collection_keeps_its_documents_fenced(
    corpus: AppPaths, starter_llm: LlamaCppModel
) -> None:
    """The ingest side's prompt (a collection description written from sampled chunks,
    as ``Library.write_description`` does; not saved, so the other tests see the corpus as is)."""
    recorder = RecordingModel(starter_llm)
    library = Library.open(Settings(), corpus)
    try:
        sample = await library.sample_chunks("milvus", 8)
    finally:
        await library.aclose()
    assert await describe_collection(recorder, "milvus", sample)
    messages = recorder.messages()
    assert any(inside_fences(m, sentence) for m in messages for sentence in SECTION_TWO)
    audit(messages)
