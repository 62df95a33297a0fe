"""A collection description written by a real local model from a sample of chunks."""

from __future__ import annotations

from pathlib import Path

import pytest
from ingest_files import paths_in

from app.core.models import Chunk
from app.core.settings import Settings
from app.ingest.describe import clean_description, describe_collection, description_prompt
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library


def test_the_prompt_fences_the_name_and_each_excerpt_with_its_source_and_headings() -> None:
    chunk = Chunk(
        chunk_id="d:00000",
        doc_id="d",
        collection="c",
        path="/docs/tides.md",
        text="The spring tide   peaks at 5.2 metres.",
        title="Tide Tables",
        headings=("Tides", "Spring"),
    )
    messages = description_prompt("coast", [chunk])
    user = messages[1]["content"]
    # the name and each excerpt are fenced data, the excerpt titled with its source and headings
    assert '<document id="name">\ncoast\n</document>' in user
    excerpt = '<document id="excerpt 1" title="Tide Tables (Tides › Spring)">'
    assert f"{excerpt}\nThe spring tide peaks at 5.2 metres.\n</document>" in user
    assert "quoted data" in messages[0]["content"]


def test_reasoning_and_labels_are_cleaned_off() -> None:
    assert (
        clean_description('<think>hmm</think> Description: "Notes on tides."') == "Notes on tides."
    )
    long = "A sentence about tides. " * 40
    cleaned = clean_description(long)
    assert len(cleaned) <= 400 and cleaned.endswith(".")


@pytest.mark.slow
async def test_a_local_model_describes_a_collection(
    tmp_path: Path, starter_model_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    from app.llm.llamacpp import LlamaCppModel

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {
        "tides.txt": "Spring tides at Skerry Point peak at 5.2 metres in March.",
        "harbour.txt": "The harbour master logs every fishing boat that enters after dusk.",
        "storms.txt": "Winter storms close the coastal road to the lighthouse twice a year.",
    }.items():
        (docs / name).write_text(text + "\n", encoding="utf-8")
    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    model = LlamaCppModel(starter_model_path, n_ctx=2048)
    try:
        [_ async for _ in library.ingest([docs], "coast")]
        sample = await library.sample_chunks("coast", 8)
        assert {Path(c.path).name for c in sample} == {"tides.txt", "harbour.txt", "storms.txt"}
        text = await library.write_description("coast", model)
        assert text and len(text) <= 400 and "<think>" not in text
        (collection,) = await library.collections()
        assert collection.description == text
        assert await describe_collection(model, "coast", sample)  # the function on its own
    finally:
        await model.aclose()
        await library.aclose()
