"""What a research run may be told beyond its budget: one typed set of options.

The window and ``fathom ask`` pass none (the defaults) or a few (the starter model's
shorter report); benchmarks and tests set the rest. A misspelled option is refused
with the names that exist, instead of being ignored (it was a dict of strings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.core.options import option
from app.research.budget import REPORT_SHARE

if TYPE_CHECKING:  # the store's module loads Milvus: not needed to hold an option
    from app.store.vectors import SearchMode


@dataclass(frozen=True)
class RunOptions:
    """Options of one research run, each with its default and what it changes."""

    prompt_chars: int = option(
        6000, low=1, help="room for document text in one prompt, in characters"
    )
    report_max_tokens: int = option(
        900, low=1, help="the longest report the writer may write, in tokens"
    )
    report_share: float = option(
        REPORT_SHARE, low=0, high=1, help="share of max_seconds kept for the report"
    )
    findings: bool = option(True, help="quote under the report the passages it rests on")
    short_answer: bool = option(False, help="also extract the report's short answer (benchmarks)")
    model_votes: bool | None = option(
        None,
        help="the research model's verdict joins the claim check; None: unless it is the starter",
    )
    bridge_queries: bool = option(
        True, help="deep: search for the passages linking one hop to the next"
    )
    table_max_chunks: int = option(
        10, low=1, help="table: chunks read for mentions (one model call each)"
    )
    table_max_rows: int = option(8, low=1, help="table: entities enriched (one model call each)")
    hds_turn_tokens: int = option(512, low=1, help="hds: the longest turn of the model, in tokens")
    hds_search_mode: SearchMode = option(
        "hybrid", choices=("hybrid", "bm25", "dense"), help="hds: how its searches rank"
    )

    @classmethod
    def of(cls, options: RunOptions | Mapping[str, Any] | None) -> RunOptions:
        """``options`` as a :class:`RunOptions` (a mapping's keys must be option names)."""
        if options is None:
            return cls()
        if isinstance(options, RunOptions):
            return options
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise ValueError(
                f"no run option named {', '.join(unknown)}; the options are {', '.join(names)}"
            )
        return cls(**options)
