"""Read an exported report back, each format with a real parser of its kind:
Markdown with markdown-it-py, HTML with ``html.parser``, PDF through ``pdftotext``.

Each reader returns the same shape, :class:`ReadBack`: the text before the
Sources heading, how many Sources headings there are, and each source entry
(its number and its whole text, passage included) per section."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

SECTIONS = ("Sources", "Also consulted", "Open questions")
_ENTRY = re.compile(r"^\[(\d+)\]\s")


@dataclass
class ReadBack:
    body: str = ""
    headings: list[str] = field(default_factory=list)
    # section name -> [(number, entry text)]
    entries: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)  # section name -> its whole text

    def sources(self, section: str = "Sources") -> list[tuple[int, str]]:
        return self.entries.get(section, [])


def flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def squeezed(text: str) -> str:
    """Text with no whitespace and no hyphen: a PDF's line wrapping adds and drops spaces,
    and pdftotext joins a word broken after a hyphen without it."""
    return "".join(unicodedata.normalize("NFKC", text).split()).replace("-", "")


# -- Markdown ------------------------------------------------------------------


def _inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def read_markdown(text: str) -> ReadBack:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out = ReadBack()
    section = ""
    body: list[str] = []
    item: list[str] | None = None
    depth = 0
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            title = _inline_text(tokens[i + 1])
            out.headings.append(title)
            if token.tag == "h2" and title in SECTIONS:
                section = title
                out.entries.setdefault(section, [])
                out.after.setdefault(section, "")
                continue
        if token.type == "bullet_list_open":
            depth += 1
        elif token.type == "bullet_list_close":
            depth -= 1
        elif token.type == "list_item_open" and depth == 1 and section:
            item = []
        elif token.type == "list_item_close" and depth == 1 and item is not None:
            _add_entry(out, section, " ".join(item))
            item = None
        if token.type == "inline":
            text_of = _inline_text(token)
        else:
            text_of = token.content if token.type in ("fence", "code_block") else ""
        if not text_of:
            continue
        if item is not None:
            item.append(text_of)
        if section:
            out.after[section] += " " + text_of
        else:
            body.append(text_of)
    out.body = "\n".join(body)
    return out


def _add_entry(out: ReadBack, section: str, text: str) -> None:
    match = _ENTRY.match(flat(text))
    if match:
        out.entries[section].append((int(match.group(1)), flat(text)))


# -- HTML ------------------------------------------------------------------------


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = ReadBack()
        self.section = ""
        self.body: list[str] = []
        self.heading: list[str] | None = None
        self.heading_tag = ""
        self.lists = 0
        self.item: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.heading, self.heading_tag = [], tag
        elif tag in ("ul", "ol"):
            self.lists += 1
        elif tag == "li" and self.lists == 1 and self.section:
            self.item = []

    def handle_endtag(self, tag: str) -> None:
        if tag == self.heading_tag and self.heading is not None:
            title = flat("".join(self.heading))
            self.out.headings.append(title)
            if tag == "h2" and title in SECTIONS:
                self.section = title
                self.out.entries.setdefault(title, [])
                self.out.after.setdefault(title, "")
            self.heading = None
        elif tag in ("ul", "ol"):
            self.lists -= 1
        elif tag == "li" and self.lists == 1 and self.item is not None:
            _add_entry(self.out, self.section, "".join(self.item))
            self.item = None

    def handle_data(self, data: str) -> None:
        if self.heading is not None:
            self.heading.append(data)
            return
        if self.item is not None:
            self.item.append(data)
        if self.section:
            self.out.after[self.section] += data
        else:
            self.body.append(data)


def read_html(text: str) -> ReadBack:
    parser = _Html()
    body_at = text.index("<body>")
    parser.feed(text[body_at:])
    parser.close()
    parser.out.body = "".join(parser.body)
    return parser.out


# -- PDF -------------------------------------------------------------------------

# a source entry's first line: its number, then its title, a dash and its path (pdftotext
# drops the list's bullet); a passage's wrapped line that opens with "[3]" has no dash
_PDF_ENTRY = re.compile(r"^\[(\d+)\] (?=.* — )", re.MULTILINE)


def pdf_text(path: Path) -> str:
    """The PDF's text, without the page numbers Qt prints at the foot of each page."""
    done = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, text=True, check=True
    )
    pages = []
    for number, page in enumerate(unicodedata.normalize("NFKC", done.stdout).split("\f"), start=1):
        lines = page.rstrip("\n").split("\n")
        if lines and lines[-1].strip() == str(number):
            lines.pop()
        pages.append("\n".join(lines))
    return "\n".join(pages)


def read_pdf(path: Path) -> ReadBack:
    """Headings are the lines that read exactly as a section's name; an entry starts at a
    line that opens with ``[n]`` and names a path after a dash."""
    text = pdf_text(path)
    out = ReadBack()
    parts = re.split(rf"^({'|'.join(SECTIONS)})\s*$", text, flags=re.MULTILINE)
    out.body = parts[0]
    for name, section_text in zip(parts[1::2], parts[2::2], strict=True):
        out.headings.append(name)
        out.after[name] = section_text
        starts = list(_PDF_ENTRY.finditer(section_text))
        entries = out.entries.setdefault(name, [])
        for k, match in enumerate(starts):
            end = starts[k + 1].start() if k + 1 < len(starts) else len(section_text)
            entries.append((int(match.group(1)), flat(section_text[match.start() : end])))
    return out
