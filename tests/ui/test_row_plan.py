"""The row changes an item model makes to show a new list (``app.ui.row_plan``): no Qt."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from app.ui.row_plan import RowPlan, RowRange, plan_rows, row_runs

ROOT = Path(__file__).resolve().parents[2]


def apply(old: list[str], new: list[str], plan: RowPlan) -> list[str]:
    """What a model does with ``plan``: the rows after it, each kept row checked in place."""
    rows = list(old)
    for gone in plan.removed:
        assert 0 <= gone.first <= gone.last < len(rows), (gone, rows)
        del rows[gone.first : gone.last + 1]
    at = 0
    for run, inserted in plan.steps():
        assert run.first == at, (run, at)  # the steps cover the new list's rows in order
        if inserted:
            assert all(key not in rows for key in new[run.first : run.last + 1])
            rows[run.first : run.first] = new[run.first : run.last + 1]
        else:
            assert rows[run.first : run.last + 1] == new[run.first : run.last + 1]
        at = run.last + 1
    assert at == len(new)
    return rows


def test_the_same_rows_keep_every_row_and_change_none() -> None:
    assert plan_rows(list("abc"), list("abc")) == RowPlan(kept=(RowRange(0, 2),))
    assert plan_rows((), []) == RowPlan()


def test_from_nothing_and_to_nothing() -> None:
    assert plan_rows([], list("abc")) == RowPlan(inserted=(RowRange(0, 2),))
    assert plan_rows(list("abc"), []) == RowPlan(removed=(RowRange(0, 2),))


def test_new_rows_at_the_start_in_the_middle_and_at_the_end() -> None:
    assert plan_rows(list("cd"), list("abcd")) == RowPlan(
        inserted=(RowRange(0, 1),), kept=(RowRange(2, 3),)
    )
    assert plan_rows(list("ad"), list("abcd")) == RowPlan(
        inserted=(RowRange(1, 2),), kept=(RowRange(0, 0), RowRange(3, 3))
    )
    assert plan_rows(list("ab"), list("abcd")) == RowPlan(
        inserted=(RowRange(2, 3),), kept=(RowRange(0, 1),)
    )
    plan = plan_rows(list("bd"), list("abcde"))
    assert plan.inserted == (RowRange(0, 0), RowRange(2, 2), RowRange(4, 4))
    assert [(run.first, inserted) for run, inserted in plan.steps()] == [
        (0, True),
        (1, False),
        (2, True),
        (3, False),
        (4, True),
    ]


def test_rows_gone_are_removed_run_by_run_the_last_first() -> None:
    plan = plan_rows(list("abcdefg"), list("adg"))
    assert plan.removed == (RowRange(4, 5), RowRange(1, 2))
    assert plan.inserted == () and plan.kept == (RowRange(0, 2),)
    assert plan_rows(list("abc"), list("b")).removed == (RowRange(2, 2), RowRange(0, 0))


def test_rows_gone_and_new_together() -> None:
    plan = plan_rows(list("abc"), list("xbyz"))
    assert plan.removed == (RowRange(2, 2), RowRange(0, 0))
    assert plan.inserted == (RowRange(0, 0), RowRange(2, 3)) and plan.kept == (RowRange(1, 1),)
    assert apply(list("abc"), list("xbyz"), plan) == list("xbyz")


def test_a_reorder_drops_the_rows_from_the_first_out_of_place_on_and_inserts_them_again() -> None:
    plan = plan_rows(list("abcd"), list("abdc"))
    assert plan.removed == (RowRange(2, 3),)
    assert plan.inserted == (RowRange(2, 3),) and plan.kept == (RowRange(0, 1),)
    # counted after the rows gone are removed: "b" goes, then "d", "c" (rows 1-2 of "a c d") go for the reorder
    plan = plan_rows(list("abcd"), list("adc"))
    assert plan.removed == (RowRange(1, 1), RowRange(1, 2))
    assert plan.inserted == (RowRange(1, 2),) and plan.kept == (RowRange(0, 0),)
    assert apply(list("abcd"), list("adc"), plan) == list("adc")
    swapped = plan_rows(list("ab"), list("ba"))
    assert swapped == RowPlan(removed=(RowRange(0, 1),), inserted=(RowRange(0, 1),))


def test_any_two_lists_give_a_plan_that_makes_the_new_one() -> None:
    rng = random.Random(34)
    keys = [f"k{i}" for i in range(12)]
    for _ in range(2000):
        old = rng.sample(keys, rng.randint(0, len(keys)))
        new = rng.sample(keys, rng.randint(0, len(keys)))
        if rng.random() < 0.5:  # mostly kept in order, as a growing tree is
            new = sorted(
                new, key=lambda key: old.index(key) if key in old else rng.random() * len(old)
            )
        plan = plan_rows(old, new)
        assert apply(old, new, plan) == new, (old, new, plan)
        gone_runs = row_runs([row for row, key in enumerate(old) if key not in new])
        stays = [key for key in old if key in new]
        in_order = [key for key in new if key in stays] == stays
        # the runs of rows gone, the last first; then, for a reorder, one range more
        assert plan.removed[: len(gone_runs)] == tuple(
            RowRange(a, b) for a, b in reversed(gone_runs)
        )
        assert len(plan.removed) == len(gone_runs) + (0 if in_order else 1)
        if in_order:  # only the rows gone and the new ones change
            assert sum(len(run.rows) for run in plan.kept) == len(stays)


def test_runs_of_consecutive_rows() -> None:
    assert row_runs([]) == []
    assert row_runs([0, 1, 2, 5, 7, 8]) == [(0, 2), (5, 5), (7, 8)]


def test_the_plan_imports_no_qt() -> None:
    code = "import sys, app.ui.row_plan; assert not [m for m in sys.modules if m.startswith('PySide6')]"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
