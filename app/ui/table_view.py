"""Table mode's result: a sortable table, low-confidence cells highlighted,
the supporting quote as each cell's tooltip."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from app.core.models import EntityTable, TableCell
from app.research.entity_table import LOW_CONFIDENCE
from app.ui.theme import low_confidence_brush
from app.ui.tooltips import plain_tooltip

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
CELL_ROLE = Qt.ItemDataRole.UserRole + 2

_Index = QModelIndex | QPersistentModelIndex


class EntityTableModel(QAbstractTableModel):
    """Column 0 is the entity; then one column per attribute."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._table: EntityTable | None = None

    def set_table(self, table: EntityTable | None) -> None:
        self.beginResetModel()
        self._table = table
        self.endResetModel()

    def table(self) -> EntityTable | None:
        return self._table

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() or self._table is None:
            return 0
        return len(self._table.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() or self._table is None:
            return 0
        return 1 + len(self._table.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if self._table is None or role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            if section == 0:
                return self._table.entity_type or "Entity"
            if 0 < section <= len(self._table.columns):
                return self._table.columns[section - 1]
            return None
        return section + 1

    def cell(self, row: int, column: int) -> TableCell | None:
        if self._table is None or column == 0:
            return None
        _, cells = self._table.rows[row]
        return cells[column - 1] if column - 1 < len(cells) else None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self._table is None:
            return None
        row, column = index.row(), index.column()
        if not (0 <= row < len(self._table.rows)):
            return None
        entity, _ = self._table.rows[row]
        cell = self.cell(row, column)
        if role in (Qt.ItemDataRole.DisplayRole, SORT_ROLE):
            if column == 0:
                return entity
            if cell is None:
                return ""
            if role == SORT_ROLE:
                try:
                    return float(cell.value)
                except ValueError:
                    return cell.value.lower()
            return cell.value
        if cell is None:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            quote = cell.quote or "no supporting quote"
            return plain_tooltip(f"“{quote}”\nconfidence {cell.confidence:.0%}")
        if (
            role == Qt.ItemDataRole.BackgroundRole
            and cell.value
            and cell.confidence <= LOW_CONFIDENCE
        ):
            return low_confidence_brush()
        if role == CELL_ROLE:
            return cell
        return None


class _SortProxy(QSortFilterProxyModel):
    def lessThan(self, left: _Index, right: _Index) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        if isinstance(a, float) and isinstance(b, float):
            return a < b
        return str(a) < str(b)


class EntityTableView(QTableView):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source_model = EntityTableModel(self)
        self.proxy = _SortProxy(self)
        self.proxy.setSourceModel(self.source_model)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.horizontalHeader().setStretchLastSection(True)

    def set_table(self, table: EntityTable | None) -> None:
        self.source_model.set_table(table)
        self.resizeColumnsToContents()
