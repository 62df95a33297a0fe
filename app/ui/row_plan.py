"""How a list of rows becomes a new list: the row changes an item model makes.

Pure (no Qt): :func:`plan_rows` compares the keys of the rows a model holds with
the keys of the rows it should show and says which rows to remove, which to
insert and which are kept (whose data the model compares itself, for
``dataChanged``). The research tree (:mod:`app.ui.tree_model`, at every level)
and the library's collections (:mod:`app.ui.library_model`) apply it, so their
views keep expansion and selection while rows come and go.

The plan, applied in order:

1. ``removed``: runs of rows whose key is gone, the last run first (each range
   counts rows as they stand when it is removed: the earlier ranges are below it);
   then, when the rows kept are in a different order than wanted, one range
   from the first row out of place to the last row (those rows come back as new).
2. ``steps()``: the new list's rows from the first, in runs: a run to insert
   (rows counted in the new list), or a run kept in place (its data may differ).
   A model walks them in this order, so that what it inserts under a kept row
   (a tree's children) comes in the order of the rows.

Keys are unique within each list.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True, slots=True)
class RowRange:
    """Rows ``first`` to ``last``, both included (as ``beginInsertRows`` takes them)."""

    first: int
    last: int

    @property
    def rows(self) -> range:
        return range(self.first, self.last + 1)


@dataclass(frozen=True, slots=True)
class RowPlan:
    """Rows to remove (in this order), then rows of the new list inserted or kept."""

    removed: tuple[RowRange, ...] = ()
    inserted: tuple[RowRange, ...] = ()  # rows of the new list
    kept: tuple[RowRange, ...] = ()  # rows of the new list whose key was there, in place

    def steps(self) -> list[tuple[RowRange, bool]]:
        """The inserted and the kept runs by row, each with ``True`` when inserted."""
        if not self.inserted:  # the usual frame: nothing new at this level
            return [(run, False) for run in self.kept]
        runs = [(run, True) for run in self.inserted] + [(run, False) for run in self.kept]
        return sorted(runs, key=lambda step: step[0].first)


def row_runs(rows: Sequence[int]) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive numbers in ``rows`` (ascending)."""
    runs: list[tuple[int, int]] = []
    for row in rows:
        if runs and runs[-1][1] == row - 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    return runs


@cache
def _all_kept(rows: int) -> RowPlan:
    """The plan of a list of ``rows`` rows that stays as it is (one object per length)."""
    return RowPlan(kept=(RowRange(0, rows - 1),) if rows else ())


def plan_rows(old: Sequence[Hashable], new: Sequence[Hashable]) -> RowPlan:
    """The changes that turn rows keyed ``old`` into rows keyed ``new`` (see the module)."""
    if len(old) == len(new) and list(old) == list(new):
        return _all_kept(len(new))
    wanted = set(new)
    gone = [row for row, key in enumerate(old) if key not in wanted]
    removed = [RowRange(first, last) for first, last in reversed(row_runs(gone))]
    left = [key for key in old if key in wanted]  # the rows after those removals
    staying = set(left)
    order = [key for key in new if key in staying]
    # reordered: drop the rows from the first out of place on; they come back as new
    if order != left:
        first = next(row for row, (a, b) in enumerate(zip(order, left, strict=True)) if a != b)
        removed.append(RowRange(first, len(left) - 1))
        staying = set(left[:first])
    inserted = [row for row, key in enumerate(new) if key not in staying]
    kept = [row for row, key in enumerate(new) if key in staying]
    return RowPlan(
        tuple(removed),
        tuple(RowRange(first, last) for first, last in row_runs(inserted)),
        tuple(RowRange(first, last) for first, last in row_runs(kept)),
    )
