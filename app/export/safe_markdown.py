"""Markdown written by a model or taken from a document, made inert (pure text, no Qt).

A report is Markdown from a local model, with document titles, paths and
quotes in it: any of it may hold raw HTML (``<img src=http://…>``,
``<script>``, ``<iframe>``), links (``[click](http://…)``, ``<http://…>``,
reference definitions, ``javascript:``) or bare URLs that a renderer turns
into links. :func:`neutralize_markdown` rewrites such text so that every
Markdown renderer (Qt's, GitHub's, a Markdown preview) shows it as text:

- ``<`` outside code is backslash-escaped, so there is no raw HTML and no
  ``<…>`` autolink;
- ``[`` outside code is backslash-escaped, so there is no link, image or
  reference definition — except the citations ``[n]`` / ``[1, 2]`` (not
  followed by ``(``, ``[`` or ``:``) and task-list boxes ``- [ ]``;
- URLs (``scheme://…``, ``www.…``, ``javascript:…``, ``host.tld/path``) and
  e-mail addresses are put in code spans, which no renderer turns into links;
  they stay readable;
- a line that looks like a code fence but is not a top-level fence (inside a
  list or quote) is escaped, and every real fenced block is re-emitted as a
  top-level fence whose backtick run is longer than any inside it, so that
  all renderers agree with this module on what is code.

Code (fenced blocks, and inline code spans whose extent is unambiguous) is
left as it is: every renderer shows code literally.
"""

from __future__ import annotations

import re

from app.export.md_fences import Fence, classify

_PUNCT = r"!-/:-@\[-`{-~"
_SCHEMES = (
    "javascript|vbscript|data|mailto|file|tel|sms|blob|about|xmpp|ftp|news|irc|magnet|ms-[a-z-]+"
)
_URL = (
    r"(?:(?<![a-z0-9.+-])[a-z][a-z0-9+.-]{0,31}://"
    r"|(?:https?|ftps?)://"
    r"|www\."
    rf"|(?<![a-z0-9.+-])(?:{_SCHEMES}):(?=\S)"
    r"|(?<![a-z0-9.@/-])(?:[a-z0-9][a-z0-9-]{0,62}\.)+[a-z]{2,63}/)"
    r"[^\s<>`\\|]*"
    # an e-mail address, which renderers turn into a mailto: link
    r"|(?<![a-z0-9._%+-])[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+"
)
_TOKEN = re.compile(rf"\\[{_PUNCT}]|`+|<|\[|(?P<url>{_URL})", re.IGNORECASE)
_CITATION = re.compile(r"\[\d{1,4}(?:\s*[,;]\s*\d{1,4})*\](?![(\[:])")
_TASK_BOX = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[[ xX]\](?=[ \t])")
_FENCE_LIKE = re.compile(r"^([ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*)(`{3,}|~{3,})")
_TRAILING = ".,:;!?*_~'\""


def _longest_run(text: str, char: str = "`") -> int:
    runs = re.findall(f"{re.escape(char)}+", text)
    return max((len(r) for r in runs), default=0)


def code_span(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds."""
    text = " ".join(text.split())
    ticks = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _trim_url(url: str) -> str:
    while True:
        before = url
        url = url.rstrip(_TRAILING)
        while url.endswith(")") and url.count(")") > url.count("("):
            url = url[:-1]
        while url.endswith("]") and url.count("]") > url.count("["):
            url = url[:-1]
        if url == before:
            return url


def _closing_run(line: str, start: int, length: int) -> re.Match[str] | None:
    return re.compile(rf"(?<!`)`{{{length}}}(?!`)").search(line, start)


def _inline(line: str, ticks: str) -> str:
    """One prose line (no line ending), made inert.

    Only two kinds of backtick run are left in the result: code spans that open and
    close on this line, and the spans this function puts around URLs (``ticks`` is
    longer than any run in the text, and a space keeps it apart from a neighbouring
    run). Every other backtick is escaped, so no renderer can pair it with another
    line's and read code where this function saw text, or the other way round.
    """
    out: list[str] = []
    pos = 0
    box = _TASK_BOX.match(line)
    if box:
        out.append(box.group(0))
        pos = box.end()
    fence_like = _FENCE_LIKE.match(line, pos)
    if fence_like:
        # a fence inside a list or a quote: some renderers open a code block here, this
        # module does not; escaping it makes everyone read the line as text
        run = fence_like.group(2)
        out.append(line[pos : fence_like.start(2)] + "".join("\\" + c for c in run))
        pos = fence_like.end()
    # in a table row a pipe splits cells before code spans are read: trust no span there
    spans_here = "|" not in line
    while True:
        match = _TOKEN.search(line, pos)
        if match is None:
            out.append(line[pos:])
            return "".join(out)
        if match.start() > pos:
            out.append(line[pos : match.start()])
        token = match.group(0)
        if match.group("url"):
            url = _trim_url(token)
            end = match.start() + len(url)
            # a backtick or a backslash just before would change the run that opens the span
            before = " " if out and out[-1].endswith(("`", "\\")) else ""
            after = " " if line[end : end + 1] == "`" else ""
            out.append(f"{before}{ticks}{url}{ticks}{after}")
            pos = end
        elif token.startswith("\\"):
            out.append(token)
            pos = match.end()
        elif token.startswith("`"):
            closing = _closing_run(line, match.end(), len(token)) if spans_here else None
            if closing is not None:
                out.append(line[match.start() : closing.end()])
                pos = closing.end()
            else:
                out.append("\\`" * len(token))
                pos = match.end()
        elif token == "<":
            out.append("\\<")
            pos = match.end()
        else:  # "["
            citation = _CITATION.match(line, match.start())
            if citation is not None and (match.start() == 0 or line[match.start() - 1] != "!"):
                out.append(citation.group(0))
                pos = citation.end()
            else:
                out.append("\\[")
                pos = match.end()


def _prose(lines: list[str]) -> list[str]:
    ticks = "`" * (_longest_run("".join(lines)) + 1)
    out = []
    for line in lines:
        body = line.rstrip("\r\n")
        out.append(_inline(body, ticks) + line[len(body) :])
    return out


def _code_block(fence: Fence, body: list[str]) -> list[str]:
    ticks = "`" * max(3, _longest_run("".join(body)) + 1)
    info = re.sub(r"[^\w+#.-]", "", fence.info.split()[0]) if fence.info.split() else ""
    return [
        f"{ticks}{info}\n",
        *(line if line.endswith("\n") else line + "\n" for line in body),
        f"{ticks}\n",
    ]


def neutralize_markdown(markdown: str) -> str:
    """``markdown`` with no raw HTML, no link, no image and no live URL (see the module)."""
    out: list[str] = []
    prose: list[str] = []
    code: list[str] = []
    fence: Fence | None = None
    for line, kind, current in classify(markdown.splitlines(keepends=True)):
        if kind == "prose":
            prose.append(line)
        elif kind == "open":
            out += _prose(prose)
            prose, code, fence = [], [], current
        elif kind == "code":
            code.append(line)
        elif fence is not None:  # close
            out += _code_block(fence, code)
            code, fence = [], None
    out += _prose(prose)
    if fence is not None:
        out += _code_block(fence, code)
    text = "".join(out)
    return text if markdown.endswith("\n") or not text.endswith("\n") else text.rstrip("\n")


def neutralize_inline(text: str) -> str:
    """One line of untrusted text (a title, a quote) for use inside a Markdown line."""
    return neutralize_markdown(" ".join(text.split()))


_QUOTED = re.compile(rf"(?P<url>{_URL})|[{_PUNCT}]", re.IGNORECASE)
# punctuation that means nothing inside a line (a list marker or a break only at its start)
_PLAIN_PUNCT = frozenset(".,?!:;'\"/=%@+-()")  # brackets are escaped, so "(" opens no link
_LIST_NUMBER = re.compile(r"^\d{1,9}(?=[.)])")


def quote_text(text: str) -> str:
    """Untrusted text (a passage, a title, a question) as literal Markdown text on one line.

    Every ASCII punctuation character that could mean something is backslash-escaped
    (the first character always, and ``1.`` at the start), so nothing in it (a fence,
    ``>``, ``#``, ``*``, ``|``, ``[3]``, ``<script>``, an entity such as ``&lt;``)
    can open a block, a link, raw HTML or emphasis, or end the line's construct
    early; URLs and e-mail addresses go in code spans so that no renderer makes them
    links. Whitespace, line breaks included, becomes single spaces. Every CommonMark
    renderer shows the text exactly as it was."""
    flat = " ".join(text.split())
    ticks = "`" * (_longest_run(flat) + 1)
    number = _LIST_NUMBER.match(flat)
    plain_from = number.end() + 1 if number else 1
    out: list[str] = []
    pos = 0
    for match in _QUOTED.finditer(flat):
        out.append(flat[pos : match.start()])
        token = match.group(0)
        if match.group("url"):
            url = _trim_url(token)
            out.append(f"{ticks}{url}{ticks}")
            out.append("".join("\\" + c for c in token[len(url) :]))
        elif token in _PLAIN_PUNCT and match.start() >= plain_from:
            out.append(token)
        else:
            out.append("\\" + token)
        pos = match.end()
    out.append(flat[pos:])
    return "".join(out)
