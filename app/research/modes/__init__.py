"""Research modes, registered by name.

Each mode is a module exposing ``async def run_mode(ctx: RunContext) -> Report``.
A mode emits its events through the context; the engine does the rest.

This package's own module stays light (names only; ``RunContext`` for the type
checker): the CLI reads the mode names at start-up, and a mode's module is
imported when it first runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.core.models import Report
    from app.research.context import RunContext

ModeRunner = Callable[["RunContext"], Awaitable["Report"]]

# name -> (module, function)
MODES: dict[str, tuple[str, str]] = {
    "deep": ("app.research.modes.deep", "run_mode"),
    "plan": ("app.research.modes.plan", "run_mode"),
    "table": ("app.research.modes.table", "run_mode"),
    "hds": ("app.research.modes.hds", "run_mode"),
    "quick": ("app.research.modes.quick", "run_mode"),
}

# The modes a person can pick (window and CLI), in menu order.
USER_MODES: tuple[str, ...] = ("deep", "plan", "table", "hds", "quick")

MODE_HELP: dict[str, str] = {
    "deep": "decompose, search, judge, reflect on gaps, repeat; then a cited report",
    "plan": "read a global view of the data, plan steps, run them in order, stop when answered",
    "table": "find every entity of a kind and fill a table of its attributes with citations",
    "hds": "reasoning-model protocol: the model writes its own search queries and a final answer",
    "quick": "one search, then an answer (the baseline)",
}


def load_mode(name: str) -> ModeRunner:
    """The runner of mode ``name``; ValueError names the known modes."""
    try:
        module_name, attr = MODES[name]
    except KeyError:
        known = ", ".join(sorted(MODES))
        raise ValueError(f"Unknown research mode '{name}'. Known modes: {known}.") from None
    module = importlib.import_module(module_name)
    runner: ModeRunner = getattr(module, attr)
    return runner
