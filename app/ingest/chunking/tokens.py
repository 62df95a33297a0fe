"""Counting tokens the way the embedder does, and the token limit a chunk must keep.

``max_tokens`` counts tokens *without* the model's special tokens; callers
pass the embedder's limit minus those (see :func:`chunk_token_limit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# [CLS] and [SEP] of BERT-style models such as all-MiniLM-L6-v2
SPECIAL_TOKENS = 2


def chunk_token_limit(model_max_tokens: int, setting_max_tokens: int) -> int:
    """Tokens a chunk's embedded text may have, leaving room for special tokens."""
    return max(16, min(model_max_tokens, setting_max_tokens) - SPECIAL_TOKENS)


class TokenCounter:
    """Counts tokens with a ``tokenizers.Tokenizer``; remembers recent answers
    (the hybrid chunker asks about the same strings many times)."""

    def __init__(self, tokenizer: Tokenizer, cache_size: int = 20_000) -> None:
        self.tokenizer = tokenizer
        self._cache: dict[str, int] = {}
        self._cache_size = cache_size

    def count(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        n = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[text] = n
        return n

    def split(self, text: str, limit: int) -> list[str]:
        """Cut ``text`` into pieces of at most ``limit`` tokens, preferring to cut at
        a paragraph, line, sentence or word boundary (one encode of the whole text)."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        n = len(offsets)
        pieces: list[str] = []
        i = 0
        while i < n:
            start = offsets[i][0]
            if n - i <= limit:
                pieces.append(text[start:])
                break
            hard = offsets[i + limit][0]
            window = text[start:hard]
            cut = hard
            for sep in ("\n\n", "\n", ". ", "; ", ", ", " "):
                k = window.rfind(sep)
                if k > len(window) // 3:
                    cut = start + k + len(sep)
                    break
            pieces.append(text[start:cut])
            j = i + 1
            while j < n and offsets[j][0] < cut:
                j += 1
            i = j
        out = [p.strip() for p in pieces]
        return [p for p in out if p]
