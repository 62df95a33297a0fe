"""The citation check: every cited sentence of a report against its chunk, in ONE
batched structured call (each cited chunk shown once, cut to its sentences
nearest the claims that cite it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.core.models import Citation
from app.llm.base import Message
from app.research import phases, prompts
from app.research.model_calls import ModelCalls
from app.research.run_events import RunEvents
from app.research.snippets import focused

MAX_CHECKED = 12


VERDICTS = ("supported", "contradicted", "unsupported")


def check_schema(n: int) -> dict[str, Any]:
    """Exactly one verdict per claim, in claim order (cheap to generate, easy to constrain)."""
    return prompts.object_schema(
        "citation_check",
        {
            "verdicts": {
                "type": "array",
                "items": {"type": "string", "enum": list(VERDICTS)},
                "minItems": n,
                "maxItems": n,
            }
        },
    )


CHECK_SOURCE_CHARS = 400  # of each source, cut to its sentences nearest the claims that cite it


def check_messages(
    citations: Sequence[Citation], source_text: Callable[[int], str], prompt_chars: int
) -> list[Message]:
    """The citation check's prompt: each cited source once (``S1``, ``S2``, …), cut
    to its sentences that share most words with the claims citing it, then the
    numbered claims, each naming its source."""
    numbers = list(dict.fromkeys(c.number for c in citations))
    label = {n: f"S{i}" for i, n in enumerate(numbers, start=1)}
    per_source = max(200, min(CHECK_SOURCE_CHARS, prompt_chars // len(numbers)))
    docs = []
    for n in numbers:
        claims = " ".join(c.sentence for c in citations if c.number == n)
        docs.append(
            prompts.fence(
                label[n], focused(source_text(n), claims, per_source), max_chars=per_source
            )
        )
    # the claims are a model's sentences written from the documents: data, fenced
    claims_block = "\n".join(
        f"Claim {i} (source {label[c.number]}): {c.sentence}"
        for i, c in enumerate(citations, start=1)
    )
    return [
        prompts.system(
            "You check whether each claim is backed by the source it names.",
            prompts.DATA_RULE,
            f"Give {len(citations)} verdicts, one per claim in order: supported (the source states it), "
            "contradicted (the source states the opposite) or unsupported (the source does not state it).",
        ),
        prompts.user(
            "\n".join(docs),
            "Claims:\n" + prompts.fence("claims", claims_block, max_chars=len(claims_block) + 200),
        ),
    ]


async def check_citations(
    calls: ModelCalls,
    events: RunEvents,
    citations: Sequence[Citation],
    source_text: Callable[[int], str],
    prompt_chars: int,
) -> list[Citation]:
    """Check every cited sentence against its source in ONE structured call.

    Returns the citations with ``supported`` set (True/False) and ``note``
    (the verdict); citations beyond :data:`MAX_CHECKED`, or when the model's
    reply is unusable, stay unchecked (``supported=None``).
    """
    if not citations:
        return []
    checked = list(citations[:MAX_CHECKED])
    events.phase(phases.CHECK, phases.checking(len(checked)), node_id="report")
    messages = check_messages(checked, source_text, prompt_chars)
    value = await calls.call_structured(
        "report", messages, check_schema(len(checked)), default={"verdicts": []}
    )
    raw = value.get("verdicts", []) if isinstance(value, dict) else []
    verdicts = [v if v in VERDICTS else "" for v in raw] if isinstance(raw, list) else []
    if verdicts and len(verdicts) != len(checked):
        events.notice(
            "The citation check gave a verdict count that does not match the claims; left unchecked."
        )
        verdicts = []
    out: list[Citation] = []
    for i, citation in enumerate(citations):
        verdict = verdicts[i] if i < len(verdicts) else ""
        if verdict == "supported":
            out.append(Citation(citation.number, citation.sentence, True, verdict))
        elif verdict in ("contradicted", "unsupported"):
            out.append(Citation(citation.number, citation.sentence, False, verdict))
        else:
            out.append(Citation(citation.number, citation.sentence, None, "not checked"))
    return out
