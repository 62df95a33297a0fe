"""The window and ``fathom ask`` build a run's budget by one rule: the same settings and
the same choices give the same budget (``fathom ask --max-rounds 6`` used to get fewer
searches than the window's 6 rounds)."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.cli import build_parser
from app.commands.ask import run_budget
from app.core.settings import ResearchSettings
from app.ui.research_panel import ResearchPanel
from app.ui.tree_model import ResearchTreeModel


def test_the_window_and_the_command_line_give_the_same_budget(qtbot: QtBot) -> None:
    settings = ResearchSettings(max_rounds=3, max_subqueries=4, max_search_calls=24, top_k=6)
    panel = ResearchPanel(ResearchTreeModel(), settings)
    qtbot.addWidget(panel)
    parser = build_parser()

    # as set: nothing changed in either
    assert run_budget(parser.parse_args(["ask", "q"]), settings) == panel.budget()

    # more rounds and sub-queries than the search calls allow: both grow the search calls
    panel.rounds.setValue(6)
    panel.subqueries.setValue(5)
    panel.top_k.setValue(9)
    panel.max_minutes.setValue(5)
    panel.max_tokens.setValue(20_000)
    args = parser.parse_args(
        [
            "ask",
            "q",
            "--max-rounds",
            "6",
            "--subqueries",
            "5",
            "--top-k",
            "9",
            "--max-seconds",
            "300",
            "--max-tokens",
            "20000",
        ]
    )
    budget = run_budget(args, settings)
    assert budget == panel.budget()
    assert budget.max_search_calls == 30  # 6 rounds × 5 sub-queries, above the setting's 24
    assert (budget.max_rounds, budget.max_subqueries, budget.top_k, budget.max_seconds) == (
        6,
        5,
        9,
        300.0,
    )
