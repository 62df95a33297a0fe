"""The library panel's collections and documents as a ``QAbstractItemModel``.

The rows are built off the GUI thread: :func:`library_rows` turns the catalog's
collections and documents into the texts shown (pure Python, run in a worker
thread by the library controller). :meth:`LibraryModel.show` then brings the
model up to date with them on the GUI thread, in slices of at most
``SLICE_MS``: collections first (all at once: they are few; the row changes
planned by :func:`app.ui.row_plan.plan_rows`), then each collection's documents
— rows that are gone removed, new ones inserted ``ROWS_AT_ONCE`` at a time,
changed ones signalled with ``dataChanged``, step by step between slices — so a
view keeps its expansion and selection, and a library of 10,000 documents
fills in without freezing the window. Every slice leaves the model valid; a
newer :meth:`show` continues from wherever the last one stopped.

Views see a collection's documents ``FETCH_ROWS`` at a time: expanding a
collection of 10,000 documents lays out 200 rows, not 10,000 (a tree view asks
the model about every row it lays out, a Python call each); the panel shows
more (:meth:`LibraryModel.show_more`) as the view scrolls to the last one. The
model holds every document all the same (:meth:`LibraryModel.documents_of`).

The rows of the collections being indexed are greyed with how far the indexing
is (:meth:`LibraryModel.set_indexing`), and a collection being indexed that the
catalog does not list yet gets a row of its own. A collection whose folders are not
there says so ("Work — folder offline", the sentence in its tooltip:
:meth:`LibraryModel.set_offline`); its documents stay listed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QBrush

from app.core.models import Collection, Document, DocumentStatus
from app.ui.formatting import short_path
from app.ui.row_plan import plan_rows, row_runs
from app.ui.tooltips import plain_tooltip

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = (
    "Collection / document",
    "Docs",
    "Chunks",
    "Description",
)  # short: the name gets the width
DESCRIPTION_COLUMN = 3
KIND_ROLE = Qt.ItemDataRole.UserRole + 1  # "collection" | "document"
NAME_ROLE = Qt.ItemDataRole.UserRole + 2  # the collection's name (a document's: its collection's)
DOC_ROLE = Qt.ItemDataRole.UserRole + 3  # a document's id
PATH_ROLE = Qt.ItemDataRole.UserRole + 4  # a document's path (as the ingest progress lists use it)
INDEXING_ROLE = Qt.ItemDataRole.UserRole + 5  # the row's indexing state, while it is being indexed
# a collection's sentence of its folders not there (None: there)
OFFLINE_ROLE = Qt.ItemDataRole.UserRole + 6
OFFLINE_MARK = "folder offline"
DESCRIPTION_TOOLTIP = (
    "Double-click to edit the description (the research engine reads it to route questions)"
)

SLICE_MS = 8.0  # the longest one slice of an update holds the GUI thread (about)
ROWS_AT_ONCE = 200  # documents views are told of at once
STEP_ROWS = 200  # documents compared between two looks at the clock
FETCH_ROWS = 200  # documents views are shown at first, and at each show_more() after
MAX_RUNS = 32  # runs of removed rows removed one by one; more, and the rows from the first on are listed again
GONE_KEPT = 64  # removed collection rows kept alive (Qt may still ask about their old indexes)


_DOCUMENT_FLAGS = (
    Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
)
# editable: the description (the view starts an edit only there)
_COLLECTION_FLAGS = (
    Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable
)


class DocumentRow(NamedTuple):
    """One document as the catalog lists it for the panel (a tuple: compared fast; the
    texts shown are made from it only for the rows on screen)."""

    doc_id: str
    path: str
    status: str
    chunk_count: int
    error: str


@dataclass(frozen=True)
class CollectionRow:
    """One collection as the panel shows it, with its documents in order."""

    name: str
    documents_shown: str  # the catalog's counts, formatted
    chunks: str
    description: str
    documents: tuple[DocumentRow, ...] = ()

    def cells(self) -> tuple[str, str, str, str]:
        return (self.name, self.documents_shown, self.chunks, self.description)


def document_row(doc: Document) -> DocumentRow:
    status = doc.status.value if isinstance(doc.status, DocumentStatus) else str(doc.status)
    return DocumentRow(doc.doc_id, doc.path, status, doc.chunk_count, doc.error)


def library_rows(
    collections: Sequence[Collection],
    documents: Mapping[str, Sequence[tuple[str, str, str, int, str]]],
) -> list[CollectionRow]:
    """The rows of these collections and their documents, each document a
    ``(doc_id, path, status, chunk_count, error)`` tuple as :func:`document_row` makes
    it or the catalog lists it (no Qt: runs in a worker thread)."""
    make = DocumentRow._make
    return [
        CollectionRow(
            c.name,
            f"{c.documents:,}",
            f"{c.chunks:,}",
            c.description,
            tuple(map(make, documents.get(c.name, ()))),
        )
        for c in collections
    ]


@dataclass(eq=False)
class _Collection:
    """A collection row the model holds; its documents are its child rows."""

    name: str
    cells: tuple[str, str, str, str]
    documents: list[DocumentRow] = field(default_factory=list)
    fetched: int = (
        0  # the first rows of ``documents`` views know of (the rest are fetched on demand)
    )


class _Root:
    """The invisible root: the internal pointer of every collection row's index."""


class LibraryModel(QAbstractItemModel):
    """Collections (top-level rows) and their documents (child rows), four columns.

    ``descriptionEdited(name, text)``: the user edited a collection's description
    (column 3). ``shown``: an update has been applied in full.
    """

    descriptionEdited = Signal(str, str)
    shown = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = _Root()
        self._collections: list[_Collection] = []
        self._gone: list[
            _Collection
        ] = []  # removed collections, kept alive: old indexes point at them
        self._wanted: list[CollectionRow] = []  # what the last show() asked for
        self._indexing: dict[str, str] = {}  # collection name: "Indexing — 12 of 40 documents"
        self._offline: dict[str, str] = {}  # collection name: what is said of its folders not there
        self._job: Iterator[None] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._work)
        self.greyed: QBrush | None = None  # the foreground of a collection being indexed
        self.slices = 0  # slices run so far (for tests and the bench)
        self.longest_slice_ms = 0.0

    # -- updates ----------------------------------------------------------
    def show(self, rows: Sequence[CollectionRow]) -> None:
        """Make the model show ``rows`` (and the rows of collections being indexed).

        The collections are brought up to date at once; their documents slice by
        slice on the loop (``shown`` says when all are)."""
        self._wanted = list(rows)
        self._job = self._sync()
        self._work()

    @property
    def updating(self) -> bool:
        """An update is still being applied."""
        return self._job is not None

    def set_indexing(self, states: Mapping[str, str]) -> None:
        """Mark these collections as being indexed (name: how far, as the row says it);
        the others show their name again. A collection the model does not list yet
        gets a row at the end."""
        before, self._indexing = self._indexing, dict(states)
        known = {item.name for item in self._collections}
        new = [name for name in self._indexing if name not in known]
        if new:
            first = len(self._collections)
            self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
            self._collections += [_Collection(name, (name, "", "", "")) for name in new]
            self.endInsertRows()
        for row, item in enumerate(self._collections):
            if item.name in new or before.get(item.name) != self._indexing.get(item.name):
                self._changed_collection(row)

    def set_offline(self, states: Mapping[str, str]) -> None:
        """Mark these collections' folders as not there (name: the sentence said of them);
        the others lose their mark. Only the rows whose mark changed are signalled."""
        before, self._offline = self._offline, dict(states)
        for row, item in enumerate(self._collections):
            if before.get(item.name) != self._offline.get(item.name):
                self._changed_collection(row)

    def _work(self) -> None:
        job = self._job
        if job is None:
            return
        started = time.perf_counter()
        deadline = started + SLICE_MS / 1000
        try:
            next(job)  # one step at least
            while time.perf_counter() < deadline:
                next(job)
        except StopIteration:
            if self._job is job:
                self._job = None
        finally:
            self.slices += 1
            self.longest_slice_ms = max(
                self.longest_slice_ms, (time.perf_counter() - started) * 1000
            )
        if self._job is None:
            self.shown.emit()
        else:
            self._timer.start()

    def _sync(self) -> Iterator[None]:
        """Bring the model to ``self._wanted``: every ``yield`` leaves it valid."""
        wanted = self._with_indexing(self._wanted)
        self._sync_collections(wanted)
        for row in wanted:
            yield from self._sync_documents(row.name, row.documents)

    def _with_indexing(self, rows: list[CollectionRow]) -> list[CollectionRow]:
        """``rows``, and a row for each collection being indexed that they lack."""
        names = {row.name for row in rows}
        return rows + [
            CollectionRow(name, "", "", "") for name in self._indexing if name not in names
        ]

    def _sync_collections(self, wanted: list[CollectionRow]) -> None:
        plan = plan_rows([item.name for item in self._collections], [row.name for row in wanted])
        for gone in plan.removed:
            self.beginRemoveRows(QModelIndex(), gone.first, gone.last)
            self._forget(self._collections[gone.first : gone.last + 1])
            del self._collections[gone.first : gone.last + 1]
            self.endRemoveRows()
        for run, inserted in plan.steps():
            if inserted:
                self.beginInsertRows(QModelIndex(), run.first, run.last)
                new = wanted[run.first : run.last + 1]
                self._collections[run.first : run.first] = [
                    _Collection(row.name, row.cells()) for row in new
                ]
                self.endInsertRows()
                continue
            for row in run.rows:
                item = self._collections[row]
                if item.cells != wanted[row].cells():
                    item.cells = wanted[row].cells()
                    self._changed_collection(row)

    def _sync_documents(self, name: str, wanted: tuple[DocumentRow, ...]) -> Iterator[None]:
        """Bring one collection's documents to ``wanted``, a few hundred rows per step."""
        item = self._find(name)
        if item is None:
            return
        docs = item.documents
        keep_fetched = item.fetched
        if len(docs) == len(wanted):  # the usual refresh: nothing or a few rows changed
            same = True
            for start in range(0, len(wanted), STEP_ROWS * 4):
                same = docs[start : start + STEP_ROWS * 4] == list(
                    wanted[start : start + STEP_ROWS * 4]
                )
                if not same:
                    break
                yield
            if same:
                return
        wanted_ids = {doc.doc_id for doc in wanted}
        yield
        # 1. rows that are gone: run by run, or (scattered) all rows from the first on
        gone = [row for row, doc in enumerate(docs) if doc.doc_id not in wanted_ids]
        yield
        runs = row_runs(gone)
        if len(runs) > MAX_RUNS:
            runs = [(runs[0][0], len(docs) - 1)]
        for first, last in reversed(runs):
            self._remove_documents(item, first, last)
            yield
        # 2. a reorder of the rows kept: drop them from the first difference on
        current_ids = [doc.doc_id for doc in docs]
        current_set = set(current_ids)
        kept = [doc.doc_id for doc in wanted if doc.doc_id in current_set]
        yield
        if kept != current_ids:
            first = next(
                i for i, (a, b) in enumerate(zip(kept, current_ids, strict=True)) if a != b
            )
            self._remove_documents(item, first, len(docs) - 1)
            current_set = {doc.doc_id for doc in docs}
            yield
        # 3. new rows scattered among the kept ones: list the rows from the first new one on again
        new_rows = [row for row, doc in enumerate(wanted) if doc.doc_id not in current_set]
        if len(row_runs(new_rows)) > MAX_RUNS:
            self._remove_documents(item, new_rows[0], len(docs) - 1)
            current_set = {doc.doc_id for doc in docs}
        yield
        # 4. walk the wanted rows: the kept ones are in place; change those that differ, insert the new ones
        row = 0
        while row < len(wanted):
            stop = min(len(wanted), row + STEP_ROWS)
            changed_from = -1  # the first row of a run of changed rows
            while row < stop and row < len(docs) and docs[row].doc_id == wanted[row].doc_id:
                if docs[row] != wanted[row]:
                    docs[row] = wanted[row]
                    changed_from = row if changed_from < 0 else changed_from
                elif changed_from >= 0:
                    self._changed_documents(item, changed_from, row - 1)
                    changed_from = -1
                row += 1
            if changed_from >= 0:
                self._changed_documents(item, changed_from, row - 1)
            if row < stop:  # a run of new rows starts here (the kept rows are in wanted's order)
                end = row + 1
                # unseen rows: all at once
                limit = len(wanted) if row >= item.fetched else row + ROWS_AT_ONCE
                while end < limit and wanted[end].doc_id not in current_set:
                    end += 1
                self._insert_documents(item, row, wanted[row:end])
                row = end
            yield
        # 5. show views as many rows as before (at least FETCH_ROWS), a chunk at a time
        target = min(len(docs), max(keep_fetched, FETCH_ROWS))
        while item.fetched < target:
            self._expose(item, min(target, item.fetched + ROWS_AT_ONCE))
            yield

    def _remove_documents(self, item: _Collection, first: int, last: int) -> None:
        """Remove documents ``first``..``last`` (those views know of with beginRemoveRows)."""
        seen_last = min(last, item.fetched - 1)
        if first <= seen_last:
            self.beginRemoveRows(self._index_of(item), first, seen_last)
            del item.documents[first : last + 1]
            item.fetched -= seen_last - first + 1
            self.endRemoveRows()
        else:
            del item.documents[first : last + 1]

    def _insert_documents(self, item: _Collection, row: int, new: Sequence[DocumentRow]) -> None:
        """Insert ``new`` at ``row``: seen by views when inside what they know of, else kept for a fetch."""
        if row < item.fetched:
            self.beginInsertRows(self._index_of(item), row, row + len(new) - 1)
            item.documents[row:row] = new
            item.fetched += len(new)
            self.endInsertRows()
        else:
            item.documents[row:row] = new

    def _expose(self, item: _Collection, upto: int) -> None:
        """Let views know of the documents up to row ``upto`` (exclusive)."""
        upto = min(upto, len(item.documents))
        if upto > item.fetched:
            self.beginInsertRows(self._index_of(item), item.fetched, upto - 1)
            item.fetched = upto
            self.endInsertRows()

    def _forget(self, items: list[_Collection]) -> None:
        self._gone = (self._gone + items)[-GONE_KEPT:]

    def _changed_collection(self, row: int) -> None:
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def _changed_documents(self, item: _Collection, first: int, last: int) -> None:
        last = min(last, item.fetched - 1)  # rows views do not know of yet need no word
        if first <= last:
            self.dataChanged.emit(
                self.createIndex(first, 0, item), self.createIndex(last, len(COLUMNS) - 1, item)
            )

    def _find(self, name: str) -> _Collection | None:
        return next((item for item in self._collections if item.name == name), None)

    def _index_of(self, item: _Collection) -> QModelIndex:
        for row, candidate in enumerate(self._collections):
            if candidate is item:
                return self.createIndex(row, 0, self._root)
        return QModelIndex()  # a collection removed since (a stale index's parent)

    # -- lookup -----------------------------------------------------------
    def collection_index(self, name: str) -> QModelIndex:
        """The row of collection ``name`` (column 0); invalid when there is none."""
        item = self._find(name)
        return QModelIndex() if item is None else self._index_of(item)

    def document_index(self, collection: str, doc_id: str) -> QModelIndex:
        """A document's row (column 0; views are told of the rows up to it); invalid when there is none."""
        item = self._find(collection)
        if item is None:
            return QModelIndex()
        row = next((i for i, doc in enumerate(item.documents) if doc.doc_id == doc_id), None)
        if row is None:
            return QModelIndex()
        self._expose(item, row + 1)
        return self.createIndex(row, 0, item)

    def collection_names(self) -> list[str]:
        return [item.name for item in self._collections]

    def documents_of(self, collection: str) -> list[DocumentRow]:
        item = self._find(collection)
        return [] if item is None else list(item.documents)

    def document_count(self) -> int:
        """Document rows in all."""
        return sum(len(item.documents) for item in self._collections)

    # -- QAbstractItemModel ----------------------------------------------
    def _parent_item(self, parent: _Index) -> _Collection | None:
        """The collection whose documents ``parent``'s children are (None: not a collection row)."""
        if (
            not parent.isValid()
            or parent.column() != 0
            or parent.internalPointer() is not self._root
        ):
            return None
        return self._collections[parent.row()] if parent.row() < len(self._collections) else None

    def index(self, row: int, column: int, parent: _Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if row < 0 or not 0 <= column < len(COLUMNS):
            return QModelIndex()
        if not parent.isValid():
            return (
                self.createIndex(row, column, self._root)
                if row < len(self._collections)
                else QModelIndex()
            )
        item = self._parent_item(parent)
        if item is None or row >= item.fetched:
            return QModelIndex()
        return self.createIndex(row, column, item)

    def parent(self, index: _Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if not index.isValid():
            return QModelIndex()
        pointer = index.internalPointer()
        if pointer is self._root or not isinstance(pointer, _Collection):
            return QModelIndex()
        return self._index_of(pointer)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return len(self._collections)
        item = self._parent_item(parent)
        return 0 if item is None else item.fetched

    def hasChildren(self, parent: _Index = QModelIndex()) -> bool:  # noqa: B008
        if not parent.isValid():
            return bool(self._collections)
        item = self._parent_item(parent)
        return item is not None and bool(item.documents)

    # Not Qt's canFetchMore/fetchMore: a tree view fetches again at every layout of an
    # expanded row, so one fetch would bring the next and so on to the last row.
    def can_show_more(self, parent: _Index) -> bool:
        """Collection ``parent`` has documents views do not know of yet."""
        item = self._parent_item(parent)
        return item is not None and item.fetched < len(item.documents)

    def show_more(self, parent: _Index) -> None:
        """Tell views of ``FETCH_ROWS`` more documents of collection ``parent``."""
        item = self._parent_item(parent)
        if item is not None:
            self._expose(item, item.fetched + FETCH_ROWS)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section] if 0 <= section < len(COLUMNS) else None
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return _COLLECTION_FLAGS if index.internalPointer() is self._root else _DOCUMENT_FLAGS

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        pointer = index.internalPointer()
        row, column = index.row(), index.column()
        if pointer is self._root:
            return (
                self._collection_data(self._collections[row], column, role)
                if row < len(self._collections)
                else None
            )
        if isinstance(pointer, _Collection) and row < pointer.fetched:
            return self._document_data(pointer, pointer.documents[row], column, role)
        return None

    def _collection_data(self, item: _Collection, column: int, role: int) -> Any:
        indexing = self._indexing.get(item.name, "")
        offline = self._offline.get(item.name, "")
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if column == 0 and (indexing or offline):
                return f"{item.name} — {indexing or OFFLINE_MARK}"
            return item.cells[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 0 and indexing:
                return plain_tooltip(
                    f"{item.name}: {indexing}. A search finds only the documents indexed so far; "
                    "a research run over it says its results are partial."
                )
            if column == 0 and offline:
                return plain_tooltip(offline)
            if column == DESCRIPTION_COLUMN:  # the column is narrow: the whole description on hover
                written = item.cells[DESCRIPTION_COLUMN]
                return plain_tooltip(
                    f"{written}\n\n{DESCRIPTION_TOOLTIP}" if written else DESCRIPTION_TOOLTIP
                )
            return None
        if role == Qt.ItemDataRole.ForegroundRole:
            return self.greyed if indexing else None
        if role == KIND_ROLE:
            return "collection"
        if role == NAME_ROLE:
            return item.name
        if role == INDEXING_ROLE:
            return indexing or None
        if role == OFFLINE_ROLE:
            return offline or None
        return None

    def _document_data(self, item: _Collection, doc: DocumentRow, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return short_path(doc.path, 3)
            return (doc.status, f"{doc.chunk_count:,}", doc.error)[column - 1]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 0:
                return plain_tooltip(doc.path)
            if column == DESCRIPTION_COLUMN and doc.error:
                return plain_tooltip(doc.error)
            return None
        if role == KIND_ROLE:
            return "document"
        if role == NAME_ROLE:
            return item.name
        if role == DOC_ROLE:
            return doc.doc_id
        if role == PATH_ROLE:
            return doc.path
        return None

    def setData(self, index: _Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        """An edit of a collection's description: shown at once, and said with ``descriptionEdited``."""
        if (
            role != Qt.ItemDataRole.EditRole
            or not index.isValid()
            or index.column() != DESCRIPTION_COLUMN
            or index.internalPointer() is not self._root
            or index.row() >= len(self._collections)
        ):
            return False
        item = self._collections[index.row()]
        text = str(value)
        if text == item.cells[DESCRIPTION_COLUMN]:
            return False
        name, documents, chunks, _ = item.cells
        item.cells = (name, documents, chunks, text)
        self.dataChanged.emit(index, index)
        self.descriptionEdited.emit(item.name, text)
        return True
