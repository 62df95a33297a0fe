"""A collection's description written by a model from a sample of its chunks.

The research loop routes questions to collections by these descriptions, so
the prompt asks for what the documents cover, in one or two plain sentences.
The excerpts and the collection's name are fenced data (:mod:`app.llm.fencing`).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core.errors import ModelError
from app.core.models import Chunk
from app.llm.base import ChatModel, Message
from app.llm.fencing import DATA_RULE, fence
from app.llm.reasoning import split_think

EXCERPT_CHARS = 400
MAX_DESCRIPTION_CHARS = 400

SYSTEM = (
    "You write short descriptions of document collections. A search assistant reads the "
    "description to decide whether a question should be searched in that collection. "
    "Reply with the description only: one or two sentences naming the subject, the kind of "
    "documents and the main topics they cover. No preamble, no lists, no quotation marks."
)


def description_prompt(name: str, chunks: Sequence[Chunk]) -> list[Message]:
    """The prompt: the collection's name and each excerpt (with its source and
    headings) fenced as data; only the request around them is Fathom's."""
    excerpts = []
    for i, chunk in enumerate(chunks, 1):
        where = chunk.title or chunk.path.rsplit("/", 1)[-1]
        heading = f" ({chunk.heading_path})" if chunk.headings else ""
        excerpts.append(
            fence(
                f"excerpt {i}",
                " ".join(chunk.text.split()),
                max_chars=EXCERPT_CHARS,
                title=where + heading,
            )
        )
    user = (
        "Collection name:\n"
        + fence("name", name, max_chars=200)
        + "\n\nExcerpts:\n"
        + "\n".join(excerpts)
        + "\n\nDescribe this collection."
    )
    return [
        {"role": "system", "content": f"{SYSTEM}\n{DATA_RULE}"},
        {"role": "user", "content": user},
    ]


def clean_description(text: str) -> str:
    answer, _ = split_think(text)
    answer = " ".join(answer.split()).strip()
    for prefix in ("Description:", "description:"):
        if answer.startswith(prefix):
            answer = answer[len(prefix) :].strip()
    answer = answer.strip('"“”').strip()
    if len(answer) > MAX_DESCRIPTION_CHARS:
        cut = answer[:MAX_DESCRIPTION_CHARS]
        answer = cut[: cut.rfind(". ") + 1] if ". " in cut else cut.rstrip() + "…"
    return answer


async def describe_collection(model: ChatModel, name: str, chunks: Sequence[Chunk]) -> str:
    """One or two sentences on what the collection holds; ModelError if the model says nothing."""
    if not chunks:
        raise ModelError(
            f"Collection '{name}' has no chunks to describe yet.", "Add documents first."
        )
    result = await model.chat(description_prompt(name, chunks), temperature=0.2, max_tokens=160)
    description = clean_description(result.content)
    if not description:
        raise ModelError(
            f"The model {model.model_name} wrote no description for '{name}'.",
            "Write one yourself with --description, or try a larger model.",
        )
    return description
