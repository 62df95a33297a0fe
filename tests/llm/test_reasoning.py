"""``<think>`` reasoning is split from the answer, also when tags are split across deltas."""

from __future__ import annotations

import pytest

from app.llm.base import ChatDelta
from app.llm.llamacpp import LlamaCppModel
from app.llm.reasoning import ThinkSplitter, split_think

REPLY = "<think>The user wants a colour.\nBlue is common.</think>Blue is a fine colour."


def _feed_in_pieces(text: str, size: int) -> tuple[str, str]:
    splitter = ThinkSplitter()
    pieces = []
    for start in range(0, len(text), size):
        pieces += splitter.feed(text[start : start + size])
    pieces += splitter.flush()
    return (
        "".join(t for c, t in pieces if c == "content"),
        "".join(t for c, t in pieces if c == "reasoning"),
    )


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_tags_split_across_deltas_are_recognised(size: int) -> None:
    assert _feed_in_pieces(REPLY, size) == (
        "Blue is a fine colour.",
        "The user wants a colour.\nBlue is common.",
    )


def test_a_stray_closing_tag_means_the_template_opened_the_block() -> None:
    assert split_think("thinking here</think>the answer") == ("the answer", "thinking here")


def test_text_that_only_looks_like_a_tag_is_kept() -> None:
    assert split_think("a < b and <thin ice>") == ("a < b and <thin ice>", "")
    assert _feed_in_pieces("x <thi", 2) == ("x <thi", "")


async def test_think_text_from_a_real_stream_goes_to_the_reasoning_channel(
    starter_llm: LlamaCppModel,
) -> None:
    # The starter model does not think on its own: a grammar makes it write a real
    # <think> block (its own words inside), streamed token by token through the
    # same path as stream().
    grammar = 'root ::= "<think>" [a-zA-Z ,.]{20,50} "</think>" [a-zA-Z ,.]{10,30}'
    deltas: list[ChatDelta] = [
        d
        async for d in starter_llm._deltas(
            [{"role": "user", "content": "Which colour is the sky? Think first."}],
            0.2,
            100,
            grammar,
        )
    ]
    reasoning = "".join(d.text for d in deltas if d.kind == "reasoning")
    content = "".join(d.text for d in deltas if d.kind == "content")
    assert len(reasoning) >= 20 and len(content) >= 10
    assert "<" not in reasoning + content and ">" not in reasoning + content
    assert len([d for d in deltas if d.kind == "reasoning"]) > 1  # streamed, not buffered
    assert deltas[-1].kind == "done"
