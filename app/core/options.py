"""One schema for settings: each option's type (its annotation), default, allowed range
or values, and a one-line description, declared with :func:`option` beside the field.

:func:`check_values` reads a settings file's table against it: a value of the wrong type
or out of range is named with its key, what is allowed, and the default used instead
(``research.top_k = -5`` had ``fathom ask`` report no passage found; ``ingest.workers =
100000`` started 157 processes; ``max_file_mb = true`` was read as 1 MB)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_origin, get_type_hints


@dataclass(frozen=True)
class Allowed:
    """What an option may hold beyond its type."""

    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    help: str = ""

    def describe(self, kind: type) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        what = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}.get(
            kind, kind.__name__
        )
        if self.low is not None and self.high is not None:
            return f"{what} from {_show(self.low)} to {_show(self.high)}"
        if self.low is not None:
            return f"{what} of at least {_show(self.low)}"
        return what


def option(
    default: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[str] = (),
    help: str = "",
) -> Any:
    """A settings field with its default, allowed range or values, and description."""
    allowed = Allowed(low=low, high=high, choices=tuple(choices), help=help)
    return field(default=default, metadata={"allowed": allowed})


def check_values(cls: type, data: dict[str, Any], where: str = "") -> list[str]:
    """Drop from ``data`` (a settings table for ``cls``, nested) every value of the wrong
    type or outside what its option allows, so that the default is used; a sentence for each."""
    problems: list[str] = []
    hints = get_type_hints(cls)
    defaults = cls()
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        kind = hints[f.name]
        value = data[f.name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            if isinstance(value, dict):
                problems += check_values(kind, value, f"{where}{f.name}.")
            continue
        allowed: Allowed = f.metadata.get("allowed", Allowed())
        if not _fits(kind, value, allowed):
            used = _show_value(getattr(defaults, f.name))
            problems.append(
                f"'{where}{f.name}' is {_show_value(value)}, not {allowed.describe(kind)}; using {used}."
            )
            del data[f.name]
    return problems


def _fits(kind: Any, value: Any, allowed: Allowed) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    elif kind is str or get_origin(kind) is Literal:
        return isinstance(value, str) and (not allowed.choices or value in allowed.choices)
    else:
        return True
    if not ok:
        return False
    return (allowed.low is None or value >= allowed.low) and (
        allowed.high is None or value <= allowed.high
    )


def _show(number: float) -> str:
    return f"{number:,.0f}" if float(number).is_integer() else f"{number:g}"


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (int, float)):
        return _show(value) if math.isfinite(value) else str(value)
    return type(value).__name__
