"""Text from documents and models shows literally in tooltips: Qt renders a tooltip that
looks like HTML as rich text, which would load a local image a chunk names."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument

from app.core.models import EntityTable, TableCell
from app.ui.table_view import EntityTableModel
from app.ui.tree_model import ResearchTreeModel, ViewNode

pytestmark = pytest.mark.gui

HOSTILE = 'See <img src="file:///etc/passwd.png"> and <b>bold</b> claims'


def _shown_as(tooltip: str) -> str:
    """What Qt shows for a tooltip: rich text rendered to plain text."""
    doc = QTextDocument()
    doc.setHtml(tooltip)
    return doc.toPlainText()


def test_a_chunk_in_the_research_tree_keeps_its_markup_as_text(qapp: Any) -> None:
    model = ResearchTreeModel()
    chunk = ViewNode(node_id="c1", kind="chunk", label="chunk", detail=HOSTILE)
    root = ViewNode(node_id="root", kind="root", label="question", children=(chunk,))
    model.apply(root)
    tip = model.data(model.index_of("c1"), Qt.ItemDataRole.ToolTipRole)
    assert "<img" not in tip and _shown_as(tip) == HOSTILE


def test_a_table_cell_quote_keeps_its_markup_as_text(qapp: Any) -> None:
    model = EntityTableModel()
    cell = TableCell(value="x", confidence=0.9, chunk_id="c", quote=HOSTILE)
    model.set_table(
        EntityTable(entity_type="thing", columns=("licence",), rows=(("faiss", (cell,)),))
    )
    tip = model.data(model.index(0, 1), Qt.ItemDataRole.ToolTipRole)
    assert "<img" not in tip and _shown_as(tip) == f"“{HOSTILE}”\nconfidence 90%"
