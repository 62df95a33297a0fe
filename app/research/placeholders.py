"""``{{step_N}}`` placeholders in plan-mode query templates.

A plan step's query may refer to what an earlier step found, e.g. a template
``"where was {{step_1}} born"`` becomes ``"where was Ada Lovelace born"`` once
step 1's finding is ``"Ada Lovelace"``. Unknown names and steps that have no
finding yet are removed (never sent to the search as literal braces) and
reported, so the caller can say so and fall back to the question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_STEP_NAME = re.compile(r"^step[_\s-]?(\d+)$", re.IGNORECASE)
_MAX_FILL_CHARS = 160


@dataclass(frozen=True)
class Filled:
    """A template with its placeholders resolved."""

    text: str
    used: tuple[int, ...] = ()  # step numbers whose findings were filled in
    missing: tuple[str, ...] = ()  # placeholders that had nothing to fill (removed)


def placeholder_names(template: str) -> list[str]:
    """Names inside ``{{…}}``, in order of appearance."""
    return [m.group(1) for m in PLACEHOLDER.finditer(template)]


def step_number(name: str) -> int | None:
    """``"step_2"`` → 2; anything else → None."""
    match = _STEP_NAME.match(name.strip())
    return int(match.group(1)) if match else None


def short_finding(finding: str, limit: int = _MAX_FILL_CHARS) -> str:
    """A finding made fit for a search query: first line, no trailing dot, bounded."""
    text = " ".join(finding.split())
    for stop in (". ", "\n"):
        head, sep, _ = text.partition(stop)
        if sep and len(head) >= 3:
            text = head
            break
    text = text.rstrip(" .")
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0]
    return text


def fill_placeholders(template: str, findings: Mapping[int, str]) -> Filled:
    """Replace ``{{step_N}}`` by step N's finding; drop what cannot be filled."""
    used: list[int] = []
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        number = step_number(name)
        value = short_finding(findings.get(number, "")) if number is not None else ""
        if not value:
            missing.append(name or "{{}}")
            return " "
        if number is not None and number not in used:
            used.append(number)
        return value

    text = PLACEHOLDER.sub(replace, template)
    text = " ".join(text.replace("{{", " ").replace("}}", " ").split())
    return Filled(text=text, used=tuple(used), missing=tuple(missing))
