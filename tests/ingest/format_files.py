"""Small real files of the formats Fathom reads through Docling beyond PDF, Office, HTML,
Markdown, CSV and AsciiDoc: each written here (by the library that writes the format, or
by hand to its specification) and holding one sentence with a word of its own."""

from __future__ import annotations

import json
import zipfile
from email.message import EmailMessage
from pathlib import Path


def sentence(word: str) -> str:
    return f"The archive keeps the {word} ledger beside the harbour lantern."


def make_format_files(folder: Path) -> dict[Path, str]:
    """Write one file per format into ``folder``; returns each file's unique word."""
    folder.mkdir(parents=True, exist_ok=True)
    words: dict[Path, str] = {}

    def add(name: str, word: str) -> Path:
        path = folder / name
        words[path] = word
        return path

    _odf(add("minutes.odt", "quillwort"), "text", sentence("quillwort"))
    _odf(add("budget.ods", "saxifrage"), "spreadsheet", sentence("saxifrage"))
    _odf(add("slides.odp", "bladderwort"), "presentation", sentence("bladderwort"))
    _epub(add("novel.epub", "cinquefoil"), sentence("cinquefoil"))
    _eml(add("letter.eml", "toadflax"), sentence("toadflax"))
    _mhtml(add("saved-page.mhtml", "butterbur"), sentence("butterbur"))
    add("note.boxnote", "knapweed").write_text(_boxnote(sentence("knapweed")), encoding="utf-8")
    add("paper.nxml", "eyebright").write_text(_jats(sentence("eyebright")), encoding="utf-8")
    add("manual.asc", "goosegrass").write_text(
        f"= Manual\n\n{sentence('goosegrass')}\n", encoding="utf-8"
    )
    add("report.qmd", "hawkbit").write_text(
        f"---\ntitle: Report\n---\n\n{sentence('hawkbit')}\n", encoding="utf-8"
    )
    _docx(add("macro-doc.docm", "sneezewort"), sentence("sneezewort"))
    _docx(add("template.dotx", "woundwort"), sentence("woundwort"))
    _xlsx(add("macro-book.xlsm", "pennycress"), sentence("pennycress"))
    _pptx(add("macro-deck.pptm", "ragwort"), sentence("ragwort"))
    return words


def _odf(path: Path, kind: str, text: str) -> None:
    from odfdo import Document, DrawPage, Frame, Paragraph, Table

    document = Document(kind)
    if kind == "text":
        document.body.append(Paragraph(text))
    elif kind == "spreadsheet":
        table = Table("Sheet1")
        table.set_value((0, 0), text)
        document.body.append(table)
    else:
        page = DrawPage("page1", name="Harbour")
        page.append(Frame.text_frame(text, size=("20cm", "3cm"), position=("1cm", "1cm")))
        document.body.append(page)
    document.save(str(path))


def _epub(path: Path, text: str) -> None:
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        book.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:x</dc:identifier>'
            "<dc:title>Harbour</dc:title><dc:language>en</dc:language></metadata>"
            '<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>',
        )
        book.writestr(
            "OEBPS/c1.xhtml",
            '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title></head>'
            f"<body><h1>Chapter one</h1><p>{text}</p></body></html>",
        )


def _eml(path: Path, text: str) -> None:
    message = EmailMessage()
    message["From"] = "Ana Berg <ana@example.org>"
    message["To"] = "bo@example.org"
    message["Subject"] = "The harbour ledger"
    message["Date"] = "Tue, 01 Dec 2026 10:00:00 +0000"
    message.set_content(text)
    path.write_bytes(bytes(message))


def _mhtml(path: Path, text: str) -> None:
    page = EmailMessage()
    page["Subject"] = "Saved page"
    page["MIME-Version"] = "1.0"
    page.set_content(f"<html><body><h1>Saved</h1><p>{text}</p></body></html>", subtype="html")
    page.make_related()
    page.get_payload()[0]["Content-Location"] = "https://example.org/page.html"
    path.write_bytes(bytes(page))


def _boxnote(text: str) -> str:
    paragraph = {"type": "paragraph", "content": [{"type": "text", "text": text}]}
    return json.dumps({"doc": {"type": "doc", "content": [paragraph]}})


def _jats(text: str) -> str:
    return (
        '<?xml version="1.0"?>'
        '<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.2 20190208//EN"'
        ' "JATS-archivearticle1.dtd">'
        "<article><front><article-meta><title-group><article-title>Harbour</article-title></title-group>"
        f"</article-meta></front><body><sec><title>Findings</title><p>{text}</p></sec></body></article>"
    )


def _docx(path: Path, text: str) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    document.save(str(path))


def _xlsx(path: Path, text: str) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = text  # type: ignore[index]
    book.save(path)


def _pptx(path: Path, text: str) -> None:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = text
    deck.save(str(path))
