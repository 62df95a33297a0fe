"""A small real corpus for the store tests: paragraphs of the Milvus docs'
"Manage Partitions" page among MuSiQue Wikipedia paragraphs (shared test data)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.core.models import Chunk

PARTITIONS_DOC = "milvus-manage-partitions"


def _paragraphs(markdown: str) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    out = []
    for block in re.split(r"\n\s*\n", text):
        block = " ".join(block.split())
        if len(block) > 60 and not block.startswith(("---", "id:", "|")):
            out.append(block)
    return out


def build_chunks(shared_data: Path, collection: str, musique: int = 90) -> list[Chunk]:
    page = shared_data / "milvus-docs" / "userGuide" / "manage-partitions.md"
    chunks = [
        Chunk(
            chunk_id=f"{PARTITIONS_DOC}:{i}",
            doc_id=PARTITIONS_DOC,
            collection=collection,
            path=str(page),
            text=para,
            title="Manage Partitions",
            headings=("Manage Partitions", "Overview" if i < 3 else "Details"),
            page=None,
            chunk_no=i,
        )
        for i, para in enumerate(_paragraphs(page.read_text(encoding="utf-8"))[:12])
    ]
    corpus = json.loads((shared_data / "musique" / "corpus.json").read_text(encoding="utf-8"))
    for i, item in enumerate(corpus[:musique]):
        doc = f"musique-{i // 10}"
        chunks.append(
            Chunk(
                chunk_id=f"{doc}:{i % 10}",
                doc_id=doc,
                collection=collection,
                path=f"/corpus/musique/{doc}.txt",
                text=f"{item['title']}. {item['text']}",
                title=item["title"],
                headings=(item["title"],),
                page=1 + i % 10,
                chunk_no=i % 10,
            )
        )
    return chunks
