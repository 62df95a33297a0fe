"""The one owner of document and collection state.

A document lives in two places: its entry in the catalog (SQLite) and its
chunks in the vector store (Milvus). Every change that touches both goes
through a :class:`Ledger` transition, in an order chosen so that a crash
between any two steps leaves a state that :meth:`Ledger.recover` (run when the
library opens) finishes, rolling forward or back, and never a document listed
as indexed whose chunks are not all searchable.

Document transitions (the catalog's status; the step names are crash points)::

    index:   [PENDING  old chunks may exist    ] document.pending
             [          old chunks deleted, flushed] document.cleared
              WRITING  chunk_count = its new count   document.writing
                       chunks written                document.chunks_written
                       chunks flushed (durable)      document.durable
              INDEXED                                document.indexed
    settle (a file that now fails or is skipped):
              PENDING → old chunks deleted → FAILED / SKIPPED (no chunks)
    remove:   REMOVING                               document.removing
                       chunks deleted, flushed       document.chunks_deleted
              entry (and its ingest root) deleted    document.removed

Collection transitions::

    create:   catalog row                            collection.created
              Milvus collection
    remove:   catalog row marked removing            collection.removing
              Milvus collection dropped              collection.dropped
              catalog rows deleted                   collection.removed
    re-index: documents pending + new model, at once collection.reset
              Milvus collection dropped, re-created

What :meth:`Ledger.recover` does with what a crash left:

- a collection marked removing: drop it, delete its rows (roll forward);
- a document REMOVING: delete its chunks and its entry (roll forward);
- a document WRITING whose chunks are all in the store: flush, INDEXED
  (roll forward); otherwise its chunks are deleted and it is PENDING;
- a document PENDING: its chunks are deleted; the next ingest or re-scan of
  its collection redoes it (roll back);
- a catalog collection with no Milvus collection, or one built with another
  embedding model than the catalog records: (re)created, its documents pending.

For the kill tests, the environment variable ``FATHOM_TEST_CRASH_AT`` names a
step (``document.durable``, or ``document.durable:3`` for its third time);
the process kills itself with SIGKILL on reaching it.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from app.core.ids import chunk_ids_of
from app.core.models import Chunk, Collection, Document, DocumentStatus
from app.core.wording import plural
from app.store.catalog import Catalog
from app.store.consistency import Drift
from app.store.disk_room import ensure_room, room_problem
from app.store.vectors import VectorStore

CRASH_ENV = "FATHOM_TEST_CRASH_AT"
STEPS = (
    "collection.created",
    "collection.reset",
    "document.pending",
    "document.cleared",
    "document.writing",
    "document.chunks_written",
    "document.durable",
    "document.indexed",
    "document.removing",
    "document.chunks_deleted",
    "document.removed",
    "collection.removing",
    "collection.dropped",
    "collection.removed",
)

_log = logging.getLogger(__name__)


def may_have_chunks(doc: Document | None) -> bool:
    """Whether the vector store may hold chunks of ``doc`` (so they must go before it changes)."""
    if doc is None:
        return False
    return doc.chunk_count > 0 or doc.status in (
        DocumentStatus.PENDING,
        DocumentStatus.WRITING,
        DocumentStatus.REMOVING,
    )


@dataclass(frozen=True)
class DocumentWrite:
    """A converted and embedded document, ready to be indexed: its new catalog entry
    (status ignored), what the catalog held before, its chunks and their vectors."""

    document: Document
    previous: Document | None
    chunks: Sequence[Chunk]
    vectors: np.ndarray


@dataclass
class Recovery:
    """What :meth:`Ledger.recover` finished (paths of documents, names of collections)."""

    rolled_forward: list[str] = field(
        default_factory=list
    )  # WRITING documents whose chunks were all there
    rolled_back: list[str] = field(default_factory=list)  # documents left pending, to be redone
    removals_finished: list[str] = field(default_factory=list)
    collections_removed: list[str] = field(default_factory=list)
    collections_recreated: list[str] = field(default_factory=list)
    research_runs_interrupted: int = 0  # research runs a crash left 'running' in History

    def __bool__(self) -> bool:
        """Whether anything at all was finished."""
        return any(getattr(self, f.name) for f in fields(self))

    def summary(self) -> str:
        parts = []
        if self.rolled_forward:
            parts.append(
                f"{plural(len(self.rolled_forward), 'document')} whose indexing was cut short "
                f"{'was' if len(self.rolled_forward) == 1 else 'were'} completed"
            )
        if self.rolled_back:
            parts.append(
                f"{plural(len(self.rolled_back), 'half-indexed document')} will be indexed again"
            )
        if self.removals_finished:
            parts.append(
                f"{plural(len(self.removals_finished), 'document removal')} "
                f"{'was' if len(self.removals_finished) == 1 else 'were'} finished"
            )
        if self.collections_removed:
            parts.append(
                f"the removal of {', '.join(repr(n) for n in self.collections_removed)} was finished"
            )
        if self.collections_recreated:
            parts.append(
                f"the search index of {', '.join(repr(n) for n in self.collections_recreated)} was rebuilt"
            )
        if self.research_runs_interrupted:
            parts.append(
                f"{plural(self.research_runs_interrupted, 'research run')} that "
                f"{'was' if self.research_runs_interrupted == 1 else 'were'} cut short "
                f"{'is' if self.research_runs_interrupted == 1 else 'are'} marked interrupted"
            )
        return "; ".join(parts)


class _CrashPoints:
    """The test-only hook: SIGKILL this process at a named step."""

    def __init__(self, spec: str) -> None:
        name, _, nth = spec.partition(":")
        self.step = name.strip()
        if self.step and self.step not in STEPS:
            raise ValueError(f"{CRASH_ENV}={spec!r}: unknown step (steps: {', '.join(STEPS)})")
        self.nth = int(nth) if nth else 1
        self.seen = 0

    def reached(self, step: str) -> None:
        if step != self.step:
            return
        self.seen += 1
        if self.seen == self.nth:
            _log.warning("%s: killing this process at %s", CRASH_ENV, step)
            kill = getattr(signal, "SIGKILL", None)
            if kill is None:  # Windows
                os._exit(137)
            os.kill(os.getpid(), kill)


class Ledger:
    """Every change to documents and collections that spans the catalog and the store.

    Methods block (SQLite, Milvus); callers run them on one store thread, so
    transitions never interleave.
    """

    def __init__(self, catalog: Catalog, store: VectorStore) -> None:
        self.catalog = catalog
        self.store = store
        spec = os.environ.get(CRASH_ENV, "")
        self._crash = _CrashPoints(spec) if spec else None

    def _step(self, name: str) -> None:
        if self._crash is not None:
            self._crash.reached(name)

    # -- collections --------------------------------------------------------------

    def create_collection(
        self, name: str, description: str, model: str, dimension: int
    ) -> Collection:
        """The catalog row first, then the Milvus collection (recover() creates a missing one)."""
        existing = self.catalog.collection(name)
        if existing is None:
            self.catalog.create_collection(name, description, model, dimension)
            self._step("collection.created")
        else:
            if description and description != existing.description:
                self.catalog.set_description(name, description)
            if not existing.embedding_model:
                self.catalog.set_embedding(name, model, dimension)
        self.store.ensure_collection(name, dimension, model)
        return self.catalog.require_collection(name)

    def remove_collection(self, name: str) -> None:
        """Mark, drop, delete: a crash at any point is finished by the next recover()."""
        self.catalog.mark_collection_removing(name)
        self._step("collection.removing")
        self._finish_collection_removal(name)

    def _finish_collection_removal(self, name: str) -> None:
        self.store.drop_collection(name)
        self._step("collection.dropped")
        self.catalog.delete_collection(name)
        self._step("collection.removed")

    def reset_collection(self, name: str, model: str, dimension: int) -> None:
        """Empty the collection's index for a new embedding model: every document becomes
        pending (the next re-scan embeds it again) and the store collection is re-created."""
        self.catalog.reset_collection(name, model, dimension)
        self._step("collection.reset")
        self.store.drop_collection(name)
        self.store.ensure_collection(name, dimension, model)

    # -- documents ------------------------------------------------------------------

    def index(self, collection: str, writes: Sequence[DocumentWrite]) -> None:
        """Replace these documents' chunks with new ones and call them indexed, in the
        order that keeps a crash recoverable (see the module docstring)."""
        if not writes:
            return
        chunk_count = sum(len(w.chunks) for w in writes)
        ensure_room(self.write_folders(), chunk_count)  # before any change: a full disk stops here
        try:
            self._index(collection, writes)
        except Exception as exc:  # the disk filled while writing (another program, a large batch)
            problem = room_problem(self.write_folders())
            if problem is not None:
                raise problem from exc
            raise

    def write_folders(self) -> list[Path]:
        """The folders a write takes room in: the catalog's, and Milvus Lite's."""
        lite = self.store.lite_folder
        return [self.catalog.path.parent, *([lite] if lite is not None else [])]

    def _index(self, collection: str, writes: Sequence[DocumentWrite]) -> None:
        stale = [
            w.previous for w in writes if w.previous is not None and may_have_chunks(w.previous)
        ]
        if stale:
            self.catalog.save_documents(
                [replace(d, status=DocumentStatus.PENDING, chunk_count=0) for d in stale]
            )
            self._step("document.pending")
            for doc in stale:
                self.store.delete_document(collection, doc.doc_id)
            self.store.flush(collection)
            self._step("document.cleared")
        self.catalog.save_documents(
            [
                replace(w.document, status=DocumentStatus.WRITING, chunk_count=len(w.chunks))
                for w in writes
            ]
        )
        self._step("document.writing")
        chunks = [c for w in writes for c in w.chunks]
        if chunks:
            self.store.insert(collection, chunks, np.concatenate([w.vectors for w in writes]))
        self._step("document.chunks_written")
        self.store.flush(collection)
        self._step("document.durable")
        self.catalog.save_documents(
            [
                replace(w.document, status=DocumentStatus.INDEXED, chunk_count=len(w.chunks))
                for w in writes
            ]
        )
        self._step("document.indexed")

    def settle(self, collection: str, doc: Document, previous: Document | None) -> None:
        """Record a document that ends with no chunks (failed, skipped), deleting any it had."""
        if may_have_chunks(previous):
            assert previous is not None
            self.catalog.save_documents(
                [replace(previous, status=DocumentStatus.PENDING, chunk_count=0)]
            )
            self._step("document.pending")
            self.store.delete_document(collection, previous.doc_id)
            self.store.flush(collection)
            self._step("document.cleared")
        self.catalog.save_documents([replace(doc, chunk_count=0)])

    def refresh(self, doc: Document) -> None:
        """Update a document's file facts (size, time) when its content did not change."""
        self.catalog.save_documents([doc])

    def remove_document(self, doc: Document, *, forget_root: bool) -> None:
        """Mark removing, delete the chunks, then the entry (and, with ``forget_root``, the
        ingest root that is this very file, so a re-scan does not bring it back)."""
        self.catalog.save_documents([replace(doc, status=DocumentStatus.REMOVING)])
        self._step("document.removing")
        self._finish_document_removal(doc, forget_root=forget_root)

    def _finish_document_removal(self, doc: Document, *, forget_root: bool) -> None:
        if self.store.has_collection(doc.collection):
            self.store.delete_document(doc.collection, doc.doc_id)
            self.store.flush(doc.collection)
        self._step("document.chunks_deleted")
        roots = [(doc.collection, doc.path)] if forget_root else []
        self.catalog.delete_documents([doc.doc_id], roots=roots)
        self._step("document.removed")

    # -- recovery -------------------------------------------------------------------

    def recover(self) -> Recovery:
        """Finish what a crash left half-done (see the module docstring). Collections
        whose last ingest was cut short are also checked chunk by chunk, which catches
        what an older version of Fathom (that did not flush before ``indexed``) lost."""
        done = Recovery()
        for name in self.catalog.removing_collections():
            self._finish_collection_removal(name)
            done.collections_removed.append(name)
        for collection in self.catalog.collections():
            if self._store_collection_is_wrong(collection):
                self.reset_collection(
                    collection.name, collection.embedding_model, collection.dimension
                )
                done.collections_recreated.append(collection.name)
        interrupted = self.catalog.interrupted_collections()
        unfinished = self.catalog.documents_with_status(
            DocumentStatus.REMOVING, DocumentStatus.WRITING, DocumentStatus.PENDING
        )
        for name in sorted({d.collection for d in unfinished} | interrupted):
            self._recover_collection(
                name, [d for d in unfinished if d.collection == name], name in interrupted, done
            )
        if done:
            _log.info("recovered after an interruption: %s", done.summary())
        return done

    def _recover_collection(
        self, name: str, unfinished: list[Document], check_all: bool, done: Recovery
    ) -> None:
        present = self.store.chunk_ids_by_document(name) if self.store.has_collection(name) else {}
        changed = False
        for doc in unfinished:
            have = present.get(doc.doc_id, set())
            if doc.status is DocumentStatus.REMOVING:
                # only a file the user removed, or one gone from disk, is removed:
                # its ingest root goes too when it is this very file
                self._finish_document_removal(doc, forget_root=True)
                done.removals_finished.append(doc.path)
            elif doc.status is DocumentStatus.WRITING and have == chunk_ids_of(
                doc.doc_id, doc.chunk_count
            ):
                self.store.flush(name)
                self.catalog.save_documents([replace(doc, status=DocumentStatus.INDEXED)])
                done.rolled_forward.append(doc.path)
            elif have or doc.chunk_count or doc.status is DocumentStatus.WRITING:
                self._roll_back(doc)
                changed = True
                done.rolled_back.append(doc.path)
        if check_all:
            handled = {d.doc_id for d in unfinished}
            listed = {d.doc_id: d for d in self.catalog.documents(name)}
            damaged = [
                doc
                for doc in listed.values()
                if doc.status is DocumentStatus.INDEXED
                and doc.doc_id not in handled
                and present.get(doc.doc_id, set()) != chunk_ids_of(doc.doc_id, doc.chunk_count)
            ]
            for doc in damaged:
                self._roll_back(doc)
                changed = True
                done.rolled_back.append(doc.path)
            for orphan in present:  # chunks of no document the catalog lists with chunks
                if orphan not in listed or not may_have_chunks(listed[orphan]):
                    self.store.delete_document(name, orphan)
                    changed = True
        if changed and self.store.has_collection(name):
            self.store.flush(name)

    def _store_collection_is_wrong(self, collection: Collection) -> bool:
        if not collection.embedding_model:
            return False  # never embedded into: created on first ingest
        if not self.store.has_collection(collection.name):
            return True
        return self.store.collection_model(collection.name) != (
            collection.embedding_model,
            collection.dimension,
        )

    def _roll_back(self, doc: Document) -> None:
        if self.store.has_collection(doc.collection):
            self.store.delete_document(doc.collection, doc.doc_id)
        self.catalog.save_documents([replace(doc, status=DocumentStatus.PENDING, chunk_count=0)])

    # -- repair -----------------------------------------------------------------------

    def fix(self, drift: Sequence[Drift], *, drop_orphan_collections: bool) -> list[Document]:
        """Repair what :func:`~app.store.consistency.check_library` found; returns the
        documents left pending, whose files must be converted and embedded again.
        A Fathom collection only the store holds is dropped when ``drop_orphan_collections``
        (on a local store; a shared server may hold other people's)."""
        redo: dict[str, Document] = {}
        touched: set[str] = set()
        for item in drift:
            if item.kind == "missing_collection":
                collection = self.catalog.require_collection(item.collection)
                self.reset_collection(
                    collection.name, collection.embedding_model, collection.dimension
                )
                redo.update(
                    (d.doc_id, d)
                    for d in self.catalog.documents(collection.name, [DocumentStatus.PENDING])
                )
            elif item.kind in ("missing_chunks", "unfinished"):
                doc = self.catalog.document(item.doc_id)
                if doc is None:
                    continue
                if doc.status is DocumentStatus.REMOVING:
                    self._finish_document_removal(doc, forget_root=True)
                    continue
                self._roll_back(doc)
                touched.add(doc.collection)
                redo[doc.doc_id] = replace(doc, status=DocumentStatus.PENDING, chunk_count=0)
            elif item.kind == "extra_chunks":
                self.store.delete_chunks(item.collection, item.chunk_ids)
                touched.add(item.collection)
            elif item.kind == "orphan_chunks":
                self.store.delete_document(item.collection, item.doc_id)
                touched.add(item.collection)
            elif item.kind == "orphan_collection" and drop_orphan_collections:
                self.store.drop_collection(item.collection)
        for name in sorted(touched):
            if self.store.has_collection(name):
                self.store.flush(name)
        return list(redo.values())
