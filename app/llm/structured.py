"""Structured output shared by every back end: harden the schema, parse,
validate, and one repair round trip.

Each back end constrains generation with its own mechanism (llama.cpp grammar,
Ollama ``format``, OpenAI ``response_format``); this module makes the schema
safe for those mechanisms and checks what comes back. A finished output must
always ``json.loads``: every string gets a ``maxLength`` and every array a
``maxItems`` (so a reply cannot run past its token budget), objects with
listed properties get ``additionalProperties: false``, and parsing tolerates
raw control characters inside strings, which some grammars let through.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from app.core.errors import StructuredOutputError
from app.core.models import Usage
from app.llm.base import Message, StructuredResult

DEFAULT_MAX_STRING = 400
DEFAULT_MAX_ITEMS = 12
MIN_MAX_STRING = 40
MIN_MAX_ITEMS = 3
CHARS_PER_TOKEN = 3.0  # a cautious average for JSON text


def harden_schema(schema: dict[str, Any], *, max_tokens: int | None = None) -> dict[str, Any]:
    """A copy of ``schema`` with bounded strings and arrays and closed objects.

    Bounds the schema already sets are kept when the longest reply they allow
    fits in ``max_tokens``. Otherwise every bound (the caller's too) shrinks
    until it fits, down to a floor, so a reply is not cut off half-way — a
    cut-off reply is invalid JSON and costs a repair call.
    """
    max_string, max_items = DEFAULT_MAX_STRING, DEFAULT_MAX_ITEMS
    tighten = False
    while True:
        hardened = copy.deepcopy(schema)
        _harden(hardened, max_string, max_items, tighten=tighten)
        if max_tokens is None or worst_case_chars(hardened) <= max_tokens * CHARS_PER_TOKEN * 0.9:
            return hardened
        if max_string <= MIN_MAX_STRING and max_items <= MIN_MAX_ITEMS:
            return hardened
        if tighten:
            max_string = max(MIN_MAX_STRING, max_string * 2 // 3)
            max_items = max(MIN_MAX_ITEMS, max_items * 2 // 3)
        tighten = True


def worst_case_chars(node: Any, depth: int = 0) -> int:
    """The length of the longest JSON text a (hardened) schema allows, roughly."""
    if not isinstance(node, dict) or depth > 12:
        return 200
    if "enum" in node:
        return max((len(json.dumps(v)) for v in node["enum"]), default=4)
    if "const" in node:
        return len(json.dumps(node["const"]))
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((worst_case_chars(sub, depth + 1) for sub in node[key]), default=200)
    types = node.get("type")
    type_list = types if isinstance(types, list) else [types]
    best = 0
    for kind in type_list:
        if kind == "string":
            size = int(node.get("maxLength", DEFAULT_MAX_STRING)) * 2 + 3  # escapes can double it
        elif kind == "array":
            items = node.get("items", {})
            size = (
                int(node.get("maxItems", DEFAULT_MAX_ITEMS))
                * (worst_case_chars(items, depth + 1) + 2)
                + 2
            )
        elif kind == "object":
            props = node.get("properties", {})
            size = 2 + sum(len(k) + 5 + worst_case_chars(v, depth + 1) for k, v in props.items())
            if not props:
                size = 200
        elif kind in ("number", "integer"):
            size = 24
        elif kind == "boolean":
            size = 5
        elif kind == "null":
            size = 4
        else:
            size = 200
        best = max(best, size)
    return best


def _harden(node: Any, max_string: int, max_items: int, *, tighten: bool = False) -> None:
    """Bound strings and arrays, close objects; with ``tighten``, lower existing
    bounds above ``max_string``/``max_items`` too (never below ``minItems``)."""
    if isinstance(node, list):
        for item in node:
            _harden(item, max_string, max_items, tighten=tighten)
        return
    if not isinstance(node, dict):
        return
    types = node.get("type")
    type_set = set(types) if isinstance(types, list) else {types}
    if "string" in type_set and not {"enum", "const", "format", "pattern"} & node.keys():
        own = node.get("maxLength")
        node["maxLength"] = max_string if own is None else min(own, max_string) if tighten else own
    if "array" in type_set:
        floor = int(node.get("minItems", 0))
        if tighten and "maxItems" in node:
            node["maxItems"] = max(floor, min(node["maxItems"], max_items))
        else:
            node.setdefault("maxItems", max(floor, max_items))
    if "object" in type_set and "properties" in node:
        node.setdefault("additionalProperties", False)
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
            value, dict
        ):
            for sub in value.values():
                _harden(sub, max_string, max_items, tighten=tighten)
        elif key in (
            "items",
            "prefixItems",
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "additionalProperties",
        ):
            _harden(value, max_string, max_items, tighten=tighten)


def parse_json(text: str) -> Any:
    """Parse a reply; raw control characters inside strings are accepted."""
    return json.loads(text.strip(), strict=False)


def validation_problem(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """``(value, None)`` when ``text`` is JSON valid against ``schema``, else ``(None, why)``."""
    try:
        value = parse_json(text)
    except json.JSONDecodeError as exc:
        snippet = text.strip()[:80]
        return (
            None,
            f"the reply is not valid JSON ({exc.msg} at character {exc.pos}; it began {snippet!r})",
        )
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        return None, f"the JSON does not match the schema at {where}: {exc.message}"
    return value, None


def schema_instruction(schema: dict[str, Any]) -> str:
    """A system-prompt sentence for back ends that cannot enforce a schema themselves."""
    return (
        "Reply with one JSON value only, no prose and no code fences, "
        f"valid against this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def repair_messages(messages: Sequence[Message], bad_reply: str, problem: str) -> list[Message]:
    """The conversation plus the invalid reply and what was wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": bad_reply[:4000]},
        {
            "role": "user",
            "content": (
                f"That reply was rejected: {problem}. Reply again with only the corrected JSON, "
                "valid against the same schema."
            ),
        },
    ]


@dataclass(frozen=True)
class RawReply:
    """One constrained generation: the content text (reasoning already split off)."""

    content: str
    reasoning: str
    usage: Usage


async def structured_with_repair(
    generate: Callable[[Sequence[Message]], Awaitable[RawReply]],
    messages: Sequence[Message],
    schema: dict[str, Any],
    *,
    model_name: str,
) -> StructuredResult:
    """Generate, validate; on failure repair once; then raise an actionable error."""
    first = await generate(messages)
    value, problem = validation_problem(first.content, schema)
    if problem is None:
        return StructuredResult(value=value, reasoning=first.reasoning, usage=first.usage)
    second = await generate(repair_messages(messages, first.content, problem))
    usage = first.usage + second.usage
    value, second_problem = validation_problem(second.content, schema)
    if second_problem is None:
        reasoning = "\n".join(r for r in (first.reasoning, second.reasoning) if r)
        return StructuredResult(value=value, reasoning=reasoning, usage=usage, repaired=True)
    raise StructuredOutputError(
        f"The model {model_name} did not produce the expected structured answer, "
        f"even after one repair attempt ({second_problem}).",
        "Try again, lower the temperature, or choose a larger model in Settings.",
        usage=usage,
    )
