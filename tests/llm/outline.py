"""The structured-output case every back end is tested with."""

from __future__ import annotations

from typing import Any

from app.llm.base import Message

# A schema of nested lists and objects, the shape research plans take.
OUTLINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 60},
        "sections": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "heading": {"type": "string", "maxLength": 40},
                    "points": {
                        "type": "array",
                        "maxItems": 3,
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string", "maxLength": 60},
                                "confidence": {"type": "number"},
                            },
                            "required": ["text", "confidence"],
                        },
                    },
                },
                "required": ["heading", "points"],
            },
        },
    },
    "required": ["title", "sections"],
}
OUTLINE_PROMPT: list[Message] = [
    {"role": "system", "content": "You write short research outlines as JSON."},
    {"role": "user", "content": "Outline a short report on how rivers shape cities."},
]
