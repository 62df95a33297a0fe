"""Compare the catalog with the vector store, document by document.

:func:`check_library` lists every difference (drift) between what the catalog
says and what Milvus holds — chunk ids and counts per document, collections on
either side only, embedding models that disagree — each with a sentence a
person can read. ``Ledger.fix`` repairs them; ``Library.repair`` re-embeds what
is missing. Reading every chunk id of a collection is one query per collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.core.ids import chunk_ids_of
from app.core.models import DocumentStatus
from app.core.wording import plural
from app.store.catalog import Catalog
from app.store.vectors import VectorStore

DriftKind = Literal[
    "missing_chunks",  # an indexed document lacks some of its chunks: it must be embedded again
    "extra_chunks",  # an indexed document has chunks beyond its count: they are deleted
    "unfinished",  # a document whose indexing was cut short: it is embedded again
    "orphan_chunks",  # chunks of a document the catalog does not list: they are deleted
    "missing_collection",  # the catalog lists a collection the store lacks (or built with another model)
    "orphan_collection",  # the store holds a Fathom collection the catalog does not list
]


@dataclass(frozen=True)
class Drift:
    kind: DriftKind
    collection: str
    path: str = ""  # the document's file, when the drift is about one document
    doc_id: str = ""
    count: int = 0  # chunks concerned
    expected: int = 0  # chunks the catalog expects
    chunk_ids: tuple[str, ...] = ()  # for extra chunks: which

    def sentence(self) -> str:
        name = Path(self.path).name if self.path else ""
        where = f"'{self.collection}'"
        if self.kind == "missing_chunks":
            return (
                f"{name} ({where}): {self.count} of its {self.expected} passages are missing from the search "
                "index, so searches cannot find them."
            )
        if self.kind == "extra_chunks":
            return f"{name} ({where}): {self.count} stray passages beyond its {self.expected} are in the search index."
        if self.kind == "unfinished":
            return f"{name} ({where}): its indexing was cut short; it is not searchable yet."
        if self.kind == "orphan_chunks":
            return (
                f"{where}: {self.count} passages in the search index belong to no document in the library "
                f"(document id {self.doc_id})."
            )
        if self.kind == "missing_collection":
            return (
                f"{where}: the search index of this collection is missing or was built with another "
                f"embedding model, so none of its {self.expected} passages can be found."
            )
        return f"{where}: the search index holds this collection, but the library does not list it."

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunk_ids"] = list(self.chunk_ids)
        data["sentence"] = self.sentence()
        return data


@dataclass
class CheckResult:
    """What :func:`check_library` compared, and the drift it found."""

    collections: int = 0
    documents: int = 0
    chunks: int = 0
    drift: list[Drift] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.drift

    def summary(self) -> str:
        checked = (
            f"{plural(self.collections, 'collection')}, {plural(self.documents, 'indexed document')} and "
            f"{plural(self.chunks, 'passage')} checked"
        )
        if self.consistent:
            return f"The library is consistent: {checked}."
        return f"Found {plural(len(self.drift), 'problem')} ({checked})."

    def to_json(self) -> dict[str, Any]:
        return {
            "consistent": self.consistent,
            "collections": self.collections,
            "documents": self.documents,
            "chunks": self.chunks,
            "drift": [d.to_json() for d in self.drift],
        }


def check_library(
    catalog: Catalog, store: VectorStore, names: Sequence[str] | None = None
) -> CheckResult:
    """Compare catalog and store for the named collections (default: all)."""
    result = CheckResult()
    collections = [c for c in catalog.collections() if names is None or c.name in names]
    listed = {c.name for c in catalog.collections()}
    for collection in collections:
        result.collections += 1
        docs = catalog.documents(collection.name)
        indexed = [d for d in docs if d.status is DocumentStatus.INDEXED]
        result.documents += len(indexed)
        expected_total = sum(d.chunk_count for d in indexed)
        if collection.embedding_model and (
            not store.has_collection(collection.name)
            or store.collection_model(collection.name)
            != (collection.embedding_model, collection.dimension)
        ):
            result.drift.append(
                Drift("missing_collection", collection.name, expected=expected_total)
            )
            continue
        present = (
            store.chunk_ids_by_document(collection.name)
            if store.has_collection(collection.name)
            else {}
        )
        result.chunks += sum(len(ids) for ids in present.values())
        for doc in docs:
            have = present.pop(doc.doc_id, set())
            if doc.status is DocumentStatus.INDEXED:
                want = chunk_ids_of(doc.doc_id, doc.chunk_count)
                missing, extra = want - have, have - want
                if missing:
                    result.drift.append(
                        Drift(
                            "missing_chunks",
                            collection.name,
                            doc.path,
                            doc.doc_id,
                            count=len(missing),
                            expected=doc.chunk_count,
                        )
                    )
                if extra:
                    result.drift.append(
                        Drift(
                            "extra_chunks",
                            collection.name,
                            doc.path,
                            doc.doc_id,
                            count=len(extra),
                            expected=doc.chunk_count,
                            chunk_ids=tuple(sorted(extra)),
                        )
                    )
            elif doc.status in (
                DocumentStatus.PENDING,
                DocumentStatus.WRITING,
                DocumentStatus.REMOVING,
            ):
                result.drift.append(
                    Drift("unfinished", collection.name, doc.path, doc.doc_id, count=len(have))
                )
            elif have:  # failed or skipped documents have no chunks
                result.drift.append(
                    Drift("orphan_chunks", collection.name, doc.path, doc.doc_id, count=len(have))
                )
        for doc_id, ids in sorted(present.items()):
            result.drift.append(
                Drift("orphan_chunks", collection.name, doc_id=doc_id, count=len(ids))
            )
    if names is None:
        for name in store.list_collections():
            if name not in listed:
                result.drift.append(Drift("orphan_collection", name))
    return result
