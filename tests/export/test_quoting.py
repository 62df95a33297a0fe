"""Untrusted text quoted into the export Markdown reads back exactly as it was, in every
renderer, and never becomes structure: no block, no link, no HTML, no citation."""

from __future__ import annotations

import random
from typing import Any

from markdown_it import MarkdownIt
from PySide6.QtGui import QTextDocument
from read_back import flat

from app.core.models import Evidence
from app.export.markdown import source_entry
from app.export.safe_markdown import quote_text

PIECES = ["`", "``", "```", "~~~", "```js", "    ", "\t", "> ", "- ", "1. ", "1) ", "\n", "\n\n", "\r\n", "<", ">",
          "[", "]", "(", ")", "](", "![", "!", "\\", "|", "|---|", ":", "_", "*", "***", "# ", "## Sources", "&lt;",
          "&#60;", "&amp;", "&", ";", "<!--", "-->", "[^1]", "a", "b c", "[1]", "[3]", "[12]", "- [ ] ", "é", "漢字",
          "http://e.example/x", "www.e.example", "a@b.example", "javascript:alert(1)", "<script>", "</script>",
          "<a href=x>", "<img src=http://e.example/i>", "<http://e.example>", "[a](http://e.example)",
          "[x]: http://e.example", "---", "===", "+", "~", "$", "%", "^", "{", "}", "'", '"']  # fmt: skip


def _mixes(count: int) -> list[str]:
    rng = random.Random(15)
    mixes = ("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14))) for _ in range(count))
    return [m for m in mixes if m.strip()]


def test_quoted_text_reads_back_as_written_in_markdown_it() -> None:
    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    for text in _mixes(3000):
        tokens = parser.parse(f"> {quote_text(text)}\n")
        kinds = [t.type for t in tokens]
        assert kinds == [
            "blockquote_open",
            "paragraph_open",
            "inline",
            "paragraph_close",
            "blockquote_close",
        ], text
        children = tokens[2].children or []
        assert {c.type for c in children} <= {"text", "code_inline"}, (
            text,
            [c.type for c in children],
        )
        assert "".join(c.content for c in children) == flat(text), text


def test_quoted_text_reads_back_as_written_in_qt(qapp: Any) -> None:
    for text in _mixes(600):
        doc = QTextDocument()
        doc.setMarkdown(
            f"> {quote_text(text)}\n", QTextDocument.MarkdownFeature.MarkdownDialectGitHub
        )
        assert doc.toPlainText().strip() == flat(text).strip(), text


def test_a_source_entry_is_one_list_item_whatever_its_title_path_and_passage() -> None:
    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    for i, text in enumerate(_mixes(1000)):
        e = Evidence(7, "c7", "q", quote=text, path=f"/d/{text}.md", page=3, title=text or "t")
        tokens = parser.parse(source_entry(e))
        assert tokens[0].type == "bullet_list_open" and tokens[-1].type == "bullet_list_close", text
        assert [t.type for t in tokens].count("list_item_open") == 1, (i, text)
        assert not {t.type for t in tokens} & {
            "html_block",
            "fence",
            "code_block",
            "heading_open",
            "table_open",
        }
        inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
        assert not {c.type for c in inline} & {"link_open", "image", "html_inline"}, text
