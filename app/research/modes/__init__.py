"""Research modes, registered by name.

Each mode is a module exposing ``async def run_mode(ctx: RunContext) -> Report``.
A mode emits its events through the context; the engine does the rest.

This package's own module is names only, importing nothing: the CLI reads the
mode names at start-up, and the engine (:func:`app.research.engine.load_mode`)
imports a mode's module when it first runs.
"""

from __future__ import annotations

# name -> (module, function), in menu order
MODES: dict[str, tuple[str, str]] = {
    "deep": ("app.research.modes.deep", "run_mode"),
    "plan": ("app.research.modes.plan", "run_mode"),
    "table": ("app.research.modes.table", "run_mode"),
    "hds": ("app.research.modes.hds", "run_mode"),
    "quick": ("app.research.modes.quick", "run_mode"),
}

# The modes a person can pick (window and CLI): every mode.
USER_MODES: tuple[str, ...] = tuple(MODES)

MODE_HELP: dict[str, str] = {
    "deep": "decompose, search, judge, reflect on gaps, repeat; then a cited report",
    "plan": "read a global view of the data, plan steps, run them in order, stop when answered",
    "table": "find every entity of a kind and fill a table of its attributes with citations",
    "hds": "reasoning-model protocol: the model writes its own search queries and a final answer",
    "quick": "one search, then an answer (the baseline)",
}
