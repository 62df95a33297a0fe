"""The old name of :mod:`app.store.research_runs`, where a research run is saved.

Kept so that ``from app.store.runs import RunStore`` still works; new code
imports from ``app.store.research_runs``.
"""

from app.store.research_runs import RunStore, RunSummary

__all__ = ["RunStore", "RunSummary"]
