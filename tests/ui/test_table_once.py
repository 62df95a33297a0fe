"""Table mode in the real window, with the real starter model (llama.cpp) over the
real library (Milvus Lite, Docling): the table is in the report once (and in the
Table tab, the same table as a sortable view), the model's summary under it
repeats no table row, and no line of any prompt the model was sent leaks into
the report — a small model echoes its prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import drive, fill_research_panel, make_docs_folder, real_window, run_to_the_end

from app.llm.base import Message
from app.research.citations import split_report
from app.ui.main_window import MainWindow

pytestmark = [pytest.mark.gui, pytest.mark.slow]

QUESTION = "Which index types does Milvus support, and what is each one good for?"


class RecordingModel:
    """The real model, with every prompt it is sent kept (to look for them in the report)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.prompts: list[Sequence[Message]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def stream(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return self._model.stream(messages, **kwargs)

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return await self._model.chat(messages, **kwargs)

    async def structured(
        self, messages: Sequence[Message], schema: dict[str, Any], **kwargs: Any
    ) -> Any:
        self.prompts.append(list(messages))
        return await self._model.structured(messages, schema, **kwargs)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def instruction_lines(prompts: list[Sequence[Message]]) -> set[str]:
    """Every sentence of the prompts' own words (system messages, and the user messages
    outside their fenced data and the question block), five words or more."""
    found = set()
    for messages in prompts:
        for message in messages:
            text = message["content"]
            if message["role"] == "user":
                text = re.sub(r"<(\w+)[^>]*>.*?</\1>", " ", text, flags=re.DOTALL)  # data blocks
            for sentence in re.split(r"(?<=[.:!?])\s+|\n+", text):
                words = _words(sentence)
                if len(words.split()) >= 5:
                    found.add(words)
    return found


@pytest.fixture(scope="module")
def window(
    qapp: Any, qloop: Any, shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    home = tmp_path_factory.mktemp("table-window")
    folder = make_docs_folder(shared_data, home / "docs", broken=False)
    # a short table run with the tiny model: few chunks read, few rows filled, a short summary
    options = {"report_max_tokens": 160, "table_max_chunks": 4, "table_max_rows": 3}
    with real_window(qloop, home, [folder], "milvus", run_options=options) as win:
        engine = drive(qloop, win.services.engine())  # loaded already: the same engine
        recording = RecordingModel(engine.model)
        engine.model = recording  # type: ignore[assignment]
        win.recording = recording
        yield win


def test_table_mode_shows_its_table_once_and_never_a_line_of_its_prompt(
    qtbot: Any, aloop: Any, window: MainWindow
) -> None:
    fill_research_panel(window.research_panel, QUESTION, "table", rounds=1, subqueries=2, top_k=4)
    final = run_to_the_end(qtbot, window)

    table = final.report.table
    assert table is not None and window.presenter.table == table
    # no column echoes the plan's schema or repeats the entity type (the first column)
    keys = {"entity_type", "entity type", "columns", "column", "queries", "query"}
    names = [c.casefold() for c in table.columns]
    assert not keys & set(names) and table.entity_type.casefold() not in names, table.columns
    assert len(set(names)) == len(names), table.columns
    assert (
        window.report_tabs.currentWidget() is window.table
    )  # the table's own view comes to the front
    assert window.table.model().rowCount() == len(table.rows)

    shown = window.report.markdown_text()
    body, _sources = split_report(shown)
    table_lines = [line for line in body.splitlines() if line.lstrip().startswith("|")]
    header = table_lines[0] if table_lines else ""
    if table.rows:
        # the report holds the table once: one header row, one line per entity, nothing else table-like
        assert len(table_lines) == len(table.rows) + 2, table_lines
        assert body.count(header) == 1
    else:
        assert not table_lines, table_lines  # no table, and none made up by the model

    prompts = window.recording.prompts  # type: ignore[attr-defined]
    assert len(prompts) >= 3  # plan, extraction, report (at least)
    leaked = [line for line in instruction_lines(prompts) if line in _words(shown)]
    assert not leaked, f"prompt lines in the report: {leaked}"
    for marker in ("<table", "</table>", "<document", "return json", "json schema"):
        assert marker not in shown.lower(), marker
