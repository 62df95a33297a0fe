"""The research tree as a ``QAbstractItemModel``.

The model mirrors a pure tree of :class:`ViewNode` (built from the run's
events by ``app.research.tree.build_tree`` and :mod:`app.ui.tree_adapter`).
:meth:`ResearchTreeModel.apply` diffs the new tree against what the view
holds, level by level (:func:`app.ui.row_plan.plan_rows`), and emits the
minimal ``beginInsertRows``/``endInsertRows``, ``beginRemoveRows``/``endRemoveRows``
and ``dataChanged`` calls, so views keep their expansion and selection while
the tree grows. The caller batches: it applies the latest tree once per frame,
not once per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from app.research.tree import NodeKind, NodeStatus
from app.ui.row_plan import plan_rows
from app.ui.tooltips import plain_tooltip

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("Step", "Result", "Source")
RESULT_TOOLTIP = plain_tooltip(
    "#2 of 10: the passage's place among the 10 passages its sub-question's search found "
    "(#1 is the closest match). Every search is ranked the same way, whatever scores it uses.\n"
    "Relevant / not relevant: the model's judgement of whether the passage helps answer the question."
)
NODE_ID_ROLE = Qt.ItemDataRole.UserRole + 1
KIND_ROLE = Qt.ItemDataRole.UserRole + 2
DETAIL_ROLE = Qt.ItemDataRole.UserRole + 3
STATUS_ROLE = Qt.ItemDataRole.UserRole + 4

STATUS_COLOURS = {
    "running": QColor(245, 158, 11),
    "done": QColor(34, 160, 90),
    "relevant": QColor(34, 160, 90),
    "irrelevant": QColor(150, 150, 150),
    "failed": QColor(211, 47, 47),
    "warning": QColor(230, 120, 20),
    "cancelled": QColor(150, 150, 150),
    "info": QColor(66, 133, 244),
}


# a row of the tree: a node of the research tree, or the window's own root, a model's
# reasoning and a notice
ViewKind = NodeKind | Literal["root", "reasoning", "notice"]
ViewStatus = NodeStatus | Literal["warning", "info"]


@dataclass(frozen=True)
class ViewNode:
    """One row of the tree as the window shows it."""

    node_id: str
    kind: ViewKind
    label: str
    result: str = ""
    source: str = ""
    detail: str = ""  # the full text, shown in the detail pane and as tooltip
    status: ViewStatus = ""
    children: tuple[ViewNode, ...] = ()

    def cells(self) -> tuple[str, str, str, str, str]:
        return (self.label, self.result, self.source, self.detail, self.status)


@dataclass(eq=False)
class _Item:
    node_id: str
    kind: str
    cells: tuple[str, str, str, str, str]
    parent: _Item | None
    children: list[_Item] = field(default_factory=list)

    def row(self) -> int:
        return 0 if self.parent is None else self.parent.children.index(self)


class ResearchTreeModel(QAbstractItemModel):
    """The root item is invisible; its children are the top-level rows."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = _Item("", "root", ("", "", "", "", ""), None)
        self._by_id: dict[str, _Item] = {}
        self.inserted_ids: list[str] = []  # every node id in the order it appeared

    # -- updates ----------------------------------------------------------
    def clear(self) -> None:
        self.beginResetModel()
        self._root.children = []
        self._by_id.clear()
        self.inserted_ids = []
        self.endResetModel()

    def apply(self, tree: ViewNode) -> None:
        """Make the model show ``tree``'s children (the root itself is not a row)."""
        self._sync_children(self._root, QModelIndex(), tree.children)

    def _sync_children(self, item: _Item, index: QModelIndex, wanted: tuple[ViewNode, ...]) -> None:
        plan = plan_rows(
            [child.node_id for child in item.children], [node.node_id for node in wanted]
        )
        for gone in plan.removed:
            self.beginRemoveRows(index, gone.first, gone.last)
            for child in item.children[gone.first : gone.last + 1]:
                self._forget(child)
            del item.children[gone.first : gone.last + 1]
            self.endRemoveRows()
        for run, inserted in plan.steps():
            if inserted:
                self.beginInsertRows(index, run.first, run.last)
                new = wanted[run.first : run.last + 1]
                item.children[run.first : run.first] = [self._build(node, item) for node in new]
                self.endInsertRows()
                continue
            for row in run.rows:
                child, node = item.children[row], wanted[row]
                if child.cells != node.cells() or child.kind != node.kind:
                    child.cells, child.kind = node.cells(), node.kind
                    left = self.createIndex(row, 0, child)
                    right = self.createIndex(row, len(COLUMNS) - 1, child)
                    self.dataChanged.emit(left, right)
                self._sync_children(child, self.createIndex(row, 0, child), node.children)

    def _build(self, node: ViewNode, parent: _Item) -> _Item:
        item = _Item(node.node_id, node.kind, node.cells(), parent)
        self._by_id[node.node_id] = item
        self.inserted_ids.append(node.node_id)
        item.children = [self._build(child, item) for child in node.children]
        return item

    def _forget(self, item: _Item) -> None:
        self._by_id.pop(item.node_id, None)
        for child in item.children:
            self._forget(child)

    # -- lookup -----------------------------------------------------------
    def index_of(self, node_id: str) -> QModelIndex:
        item = self._by_id.get(node_id)
        if item is None or item.parent is None:
            return QModelIndex()
        return self.createIndex(item.row(), 0, item)

    def node_ids(self) -> list[str]:
        """Every node id, depth first (the shape a test compares)."""
        out: list[str] = []

        def walk(item: _Item) -> None:
            for child in item.children:
                out.append(child.node_id)
                walk(child)

        walk(self._root)
        return out

    def shape(self) -> list[tuple[int, str, str, str]]:
        """(depth, kind, label, result) for every row, depth first."""
        out: list[tuple[int, str, str, str]] = []

        def walk(item: _Item, depth: int) -> None:
            for child in item.children:
                out.append((depth, child.kind, child.cells[0], child.cells[1]))
                walk(child, depth + 1)

        walk(self._root, 0)
        return out

    # -- QAbstractItemModel ----------------------------------------------
    def _item(self, index: _Index) -> _Item:
        if index.isValid():
            item = index.internalPointer()
            assert isinstance(item, _Item)
            return item
        return self._root

    def index(self, row: int, column: int, parent: _Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if column < 0 or column >= len(COLUMNS) or row < 0:
            return QModelIndex()
        if parent.isValid() and parent.column() != 0:
            return QModelIndex()
        item = self._item(parent)
        if row >= len(item.children):
            return QModelIndex()
        return self.createIndex(row, column, item.children[row])

    def parent(self, index: _Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if not index.isValid():
            return QModelIndex()
        item = self._item(index)
        parent = item.parent
        if parent is None or parent is self._root:
            return QModelIndex()
        return self.createIndex(parent.row(), 0, parent)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._item(parent).children)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def hasChildren(self, parent: _Index = QModelIndex()) -> bool:  # noqa: B008
        return self.rowCount(parent) > 0

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        item = self._item(index)
        label, result, source, detail, status = item.cells
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (label, result, source)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 1 and item.kind == "chunk":
                return RESULT_TOOLTIP
            text = detail or (label, result, source)[column]
            # chunk text, model output: shown as text
            return plain_tooltip(text[:2000]) if text else None
        if role == Qt.ItemDataRole.DecorationRole and column == 0 and status in STATUS_COLOURS:
            return STATUS_COLOURS[status]
        if role == Qt.ItemDataRole.ForegroundRole and status == "irrelevant":
            return QColor(140, 140, 140)
        if role == Qt.ItemDataRole.FontRole and status == "running" and column == 0:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.FontRole and item.kind == "reasoning":
            font = QFont()
            font.setItalic(True)
            return font
        if role == NODE_ID_ROLE:
            return item.node_id
        if role == KIND_ROLE:
            return item.kind
        if role == DETAIL_ROLE:
            return detail
        if role == STATUS_ROLE:
            return status
        return None
