"""Conversion and chunking of real files, one converter for the whole module."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from ingest_files import make_encrypted_pdf, make_office_files

from app.core.errors import IngestError
from app.ingest.chunking import SPECIAL_TOKENS, TokenCounter, chunk_plain_text
from app.ingest.convert import Converter, decode_text, file_kind
from app.ingest.embedder import OnnxMiniLMEmbedder


def _alnum(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def test_every_office_and_web_format_gives_chunks_with_headings(
    converter: Converter, tmp_path: Path
) -> None:
    files = make_office_files(tmp_path)
    (tmp_path / "notes.adoc").write_text(
        "= Garden Notes\n\n== Tomatoes\n\nThe heirloom tomatoes ripened early this year.\n",
        encoding="utf-8",
    )
    (tmp_path / "table.csv").write_text(
        "city,population\nReykjavik,139000\nNuuk,19000\n", encoding="utf-8"
    )
    expected = {
        files["docx"]: ("zebrafish hatchery", "Budget"),
        files["pptx"]: ("Aurora borealis", None),
        files["xlsx"]: ("Vermilion", None),
        files["html"]: ("marmalade-coloured fog", "Storms"),
        tmp_path / "notes.adoc": ("heirloom tomatoes", "Tomatoes"),
        tmp_path / "table.csv": ("Reykjavik", None),
    }
    for path, (phrase, heading) in expected.items():
        document = converter.convert(path)
        assert document.pieces, path.name
        holding = [p for p in document.pieces if phrase in p.text]
        assert holding, (
            f"{phrase!r} not in chunks of {path.name}: {[p.text for p in document.pieces]}"
        )
        if heading is not None:
            assert heading in holding[0].headings, (path.name, holding[0].headings)
            assert heading in holding[0].embed_text  # the embedder sees the heading path


def test_markdown_front_matter_gives_the_title_not_a_chunk(
    converter: Converter, shared_data: Path
) -> None:
    document = converter.convert(shared_data / "milvus-docs" / "userGuide" / "manage-partitions.md")
    assert document.title == "Manage Partitions"
    assert not any("id: manage-partitions.md" in p.text for p in document.pieces)
    create = [p for p in document.pieces if "up to 1,024 partitions" in p.text]
    assert create and create[0].headings == ("Manage Partitions", "Create Partitions")


def test_heading_only_markdown_still_gets_a_chunk(converter: Converter, shared_data: Path) -> None:
    document = converter.convert(
        shared_data / "milvus-docs" / "adminGuide" / "upgrade_milvus_embedded.md"
    )
    assert [p.text for p in document.pieces] == ["# Upgrade Embedded Milvus"]


def test_chunks_stay_under_the_embedders_limit(
    converter: Converter, embedder: OnnxMiniLMEmbedder, shared_data: Path
) -> None:
    # a long reference page with big tables and code blocks
    sources = sorted(
        (shared_data / "milvus-docs" / "reference").rglob("*.md"), key=lambda p: -p.stat().st_size
    )[:3]
    for source in sources:
        for piece in converter.convert(source).pieces:
            assert embedder.count_tokens(piece.embed_text) <= embedder.max_tokens, source.name


def test_pdf_chunks_carry_the_page_they_come_from(converter: Converter, shared_data: Path) -> None:
    from pypdf import PdfReader

    pdf = shared_data / "pdf" / "WhatisMilvus.pdf"
    pages = [_alnum(page.extract_text()) for page in PdfReader(str(pdf)).pages]
    document = converter.convert(pdf)
    assert document.pages == len(pages) == 4
    seen_pages = set()
    for piece in document.pieces:
        assert piece.page is not None
        start = _alnum(piece.text)[:40]
        assert start in pages[piece.page - 1], (piece.page, piece.text[:80])
        if piece.page > 1:  # and it is not on the page before
            assert start not in pages[piece.page - 2]
        seen_pages.add(piece.page)
    assert seen_pages == {1, 2, 3, 4}


def test_plain_text_and_code_split_by_paragraphs_under_the_limit(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    counter = TokenCounter(embedder.tokenizer)
    paragraphs = [
        f"Paragraph {i} " + " ".join(f"word{i}x{j}" for j in range(40)) for i in range(30)
    ]
    long_line = "x = [" + ", ".join(str(n) for n in range(2000)) + "]"
    text = "\n\n".join(paragraphs) + "\n\n" + long_line + "\n"
    limit = embedder.max_tokens - SPECIAL_TOKENS
    pieces = chunk_plain_text(text, counter, limit)
    assert len(pieces) > 5
    for piece in pieces:
        assert embedder.count_tokens(piece.embed_text) <= embedder.max_tokens
    joined = " ".join(p.text for p in pieces)
    for i in range(30):  # every paragraph kept, none cut in the middle
        assert any(
            p.text.count(f"Paragraph {i} ") == 1 and f"word{i}x39" in p.text for p in pieces
        ), i
    assert "1999]" in joined


def test_text_in_other_encodings_is_decoded(converter: Converter, tmp_path: Path) -> None:
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Le café de la Gare était fermé à Noël, déjà.\n".encode("cp1252"))
    utf16 = tmp_path / "wide.txt"
    utf16.write_bytes("Grüße aus Köln\n".encode("utf-16"))
    assert "café" in converter.convert(latin).pieces[0].text
    assert "Grüße aus Köln" in converter.convert(utf16).pieces[0].text
    assert decode_text(b"\x00\x01\x02binary\x00") is None


def test_text_and_markdown_in_legacy_code_pages_read_as_written(
    converter: Converter, tmp_path: Path
) -> None:
    """Where charset-normalizer finds several code pages equally likely, Windows-1252 wins
    (it took Windows-1250 first: "père" became "pčre"); Markdown, CSV, AsciiDoc and HTML
    that are not UTF-8 are decoded the same way, not by Docling's Windows-1252-only
    fallback, except HTML that names its encoding (its parser follows the name)."""
    cases = {
        "contrat.txt": (
            "Le café du père Noël coûte 3 €.\nRésumé des clauses: l'indemnité est due.\n",
            "cp1252",
        ),
        "short.txt": ("Café crème.\n", "cp1252"),
        "wide.txt": ("Contract text, four bytes a letter.\n", "utf-32"),
        "smlouva.md": ("# Smlouva\n\nPříliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250"),
        "dogovor.md": ("# Договор\n\nДоговор вступает в силу с момента подписания.\n", "cp1251"),
        "ceny.csv": ("Název,Cena\nPříliš žluťoučký kůň,3\n", "cp1250"),
        "notes.adoc": ("= Titre\n\nLe café du père Noël coûte 3 €.\n", "cp1252"),
        "page.html": ("<html><body><p>Le café du père Noël coûte 3 €.</p></body></html>", "cp1252"),
        "named.html": (
            '<html><head><meta charset="iso-8859-1"></head><body><p>Le café du père Noël.</p></body></html>',
            "latin-1",
        ),
    }
    expected = {
        "smlouva.md": "Příliš žluťoučký kůň úpěl ďábelské ódy.",
        "dogovor.md": "Договор вступает в силу с момента подписания.",
        "ceny.csv": "Příliš žluťoučký kůň",
        "notes.adoc": "Le café du père Noël coûte 3 €.",
        "page.html": "Le café du père Noël coûte 3 €.",
        "named.html": "Le café du père Noël.",
    }
    for name, (text, encoding) in cases.items():
        (tmp_path / name).write_bytes(text.encode(encoding))
        read = " ".join(piece.text for piece in converter.convert(tmp_path / name).pieces)
        assert " ".join(expected.get(name, text).split()) in " ".join(read.split()), (name, read)


def test_source_code_and_license_files_are_text(
    converter: Converter, shared_data: Path, tmp_path: Path
) -> None:
    code = tmp_path / "tool.py"
    code.write_text("def spline(x):\n    return x * 2\n", encoding="utf-8")
    assert file_kind(code) == "text"
    assert converter.convert(code).pieces[0].text.startswith("def spline")
    license_file = shared_data / "milvus-docs" / "LICENSE"
    assert file_kind(license_file) == "text"
    assert "Apache License" in converter.convert(license_file).pieces[0].text
    assert file_kind(tmp_path / "song.mp3") is None


@pytest.mark.parametrize(
    ("name", "make", "sentence"),
    [
        ("empty.pdf", lambda p, src: p.write_bytes(b""), "The file is empty"),
        ("random.pdf", lambda p, src: p.write_bytes(os.urandom(4096)), "is not a PDF"),
        (
            "truncated.pdf",
            lambda p, src: p.write_bytes(src.read_bytes()[: src.stat().st_size // 3]),
            "damaged or incomplete",
        ),
        ("locked.pdf", lambda p, src: make_encrypted_pdf(src, p), "The PDF is encrypted"),
        (
            "fake.docx",
            lambda p, src: p.write_bytes(b"not a zip at all"),
            "is not an Office document",
        ),
        ("binary.txt", lambda p, src: p.write_bytes(b"\x00\x01\x02\x03" * 100), "looks binary"),
        ("binary.md", lambda p, src: p.write_bytes(b"\xff\xfe\x00\x00garbage"), "looks binary"),
    ],
)
def test_bad_files_fail_with_a_sentence(
    converter: Converter, shared_data: Path, tmp_path: Path, name: str, make: object, sentence: str
) -> None:
    path = tmp_path / name
    make(path, shared_data / "pdf" / "WhatisMilvus.pdf")  # type: ignore[operator]
    with pytest.raises(IngestError) as caught:
        converter.convert(path)
    assert sentence in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_pdfs_use_the_native_pipeline_unless_layout_models_are_there(
    converter: Converter, tmp_path: Path
) -> None:
    from app.ingest.convert import layout_models_present

    assert converter.pdf_pipeline == "native"  # no models configured: offline text extraction
    assert not layout_models_present("")
    assert not layout_models_present(str(tmp_path))
    (tmp_path / "docling-project--docling-layout-heron").mkdir()
    assert layout_models_present(str(tmp_path))
