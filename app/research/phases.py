"""The words of the status line: what each phase of a research run is called
(``PhaseChanged.phase``, for code and tests) and what it says to the user
(``PhaseChanged.text``), in plain English with the numbers the user can check.

No text a model or a document wrote goes into a phase's text: the status line
shows the engine's own words only.
"""

from __future__ import annotations

# phase names, in the order a run may go through them
DECOMPOSE = "decompose"
ROUTE = "route"
SEARCH = "search"
JUDGE = "judge"
BRIDGE = "bridge"
REFLECT = "reflect"
SURVEY = "survey"
PLAN = "plan"
STEP = "step"
EXTRACT = "extract"
FILL = "fill"
THINK = "think"
ANSWER = "answer"
WRITE = "write"
CHECK = "check"
SHORT_ANSWER = "short_answer"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``"1 passage"``, ``"12 passages"``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def splitting(cap: int) -> str:
    return f"Splitting the question into up to {plural(cap, 'sub-question')}"


def choosing_collections(queries: int) -> str:
    return f"Choosing which collections to search for {plural(queries, 'query', 'queries')}"


def searching(queries: int, *, what: str = "sub-question") -> str:
    """``what`` is "sub-question", "query" or "question" (searched alone)."""
    if queries == 1 and what == "question":
        return "Searching the library for the question"
    return f"Searching {plural(queries, what, 'queries' if what == 'query' else None)}"


def reading(passages: int) -> str:
    return f"Reading {plural(passages, 'passage')}"


def following(queries: int) -> str:
    return f"Following names found in the best passages: {plural(queries, 'more search', 'more searches')}"


def looking_up(names: int) -> str:
    return f"Looking up {plural(names, 'name')} nothing found mentions"


REFLECTING = "Deciding what is still missing"


def surveying(collections: int) -> str:
    return f"Looking over the library: {plural(collections, 'collection')}"


def summarising(number: int, collections: int) -> str:
    return f"Summarising collection {number} of {collections}"


PLANNING = "Writing a research plan"


def step(number: int, steps: int, doing: str) -> str:
    return f"Step {number} of {steps}: {doing}"


PLANNING_TABLE = "Planning the table's rows and columns"


def finding_entities(passages: int) -> str:
    return f"Finding what the table lists in {plural(passages, 'passage')}"


def filling(rows: int) -> str:
    return f"Filling in the table: {plural(rows, 'row')}"


def thinking(turn: int) -> str:
    return f"Deciding what to search next (turn {turn})"


FINAL_ANSWER = "Writing the final answer"
WRITING = "Writing the report"
NOTING = "Noting what each source says"


def writing(text: str, words: int) -> str:
    """A phase whose model writes text nobody sees yet, with how far it got."""
    return f"{text} — {plural(words, 'word')} written" if words else text


def checking(citations: int) -> str:
    return f"Checking {plural(citations, 'citation')}"


SHORT_ANSWERING = "Writing the short answer"
WEIGHING = "Weighing whether the passages found answer the question"
