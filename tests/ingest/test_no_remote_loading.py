"""Converting a document never fetches what it links to: images, style sheets, scripts,
frames and objects in HTML, images in Markdown (and HTML inside it). The links point at a
real HTTP server on loopback, which must see no request, and at public addresses and a
host name, which the network guard must see no attempt to reach (Docling refuses
loopback addresses itself when fetching is on; the guard catches the rest). Privacy:
nothing leaves the machine, and a document's links are data, never instructions."""

from __future__ import annotations

from pathlib import Path

from file_server import FileServer
from network_guard import NetworkGuard

from app.ingest.convert import Converter

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PUBLIC = (
    "http://203.0.113.7/photo.png",
    "https://images.example.com/logo.png",
)  # documentation addresses


def test_converting_html_and_markdown_requests_nothing_they_link_to(
    converter: Converter, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    with FileServer() as server:
        for name in (
            "img.png",
            "style.css",
            "x.js",
            "frame",
            "obj",
            "src.webp",
            "md.png",
            "md-html.png",
            "bg.png",
        ):
            server.add(f"/{name}", PNG)
        u = server.url
        (tmp_path / "page.html").write_text(
            f'<html><head><link rel="stylesheet" href="{u("/style.css")}"><script src="{u("/x.js")}"></script>'
            f'</head><body style="background: url({u("/bg.png")})"><h1>Harbour</h1><p>Tide tables are kept here.</p>'
            f'<img src="{u("/img.png")}" alt="pic"><img src="{PUBLIC[0]}"><img src="{PUBLIC[1]}">'
            f'<iframe src="{u("/frame")}"></iframe><object data="{u("/obj")}"></object>'
            f'<picture><source srcset="{u("/src.webp")}"></picture></body></html>',
            encoding="utf-8",
        )
        (tmp_path / "note.md").write_text(
            f"# Note\n\nThe ferry leaves at noon.\n\n![pic]({u('/md.png')})\n\n![photo]({PUBLIC[0]})\n\n"
            f'<img src="{u("/md-html.png")}"><img src="{PUBLIC[1]}">\n',
            encoding="utf-8",
        )
        page = " ".join(p.text for p in converter.convert(tmp_path / "page.html").pieces)
        note = " ".join(p.text for p in converter.convert(tmp_path / "note.md").pieces)
        assert (
            "Tide tables are kept here." in page and "The ferry leaves at noon." in note
        )  # both were read
        assert server.seen() == []
    assert network_guard.violations == []


def test_a_word_file_with_a_linked_image_is_read_without_fetching_it(
    converter: Converter, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    """A picture linked, not embedded (``r:link`` to an external target: how a web bug
    hides in a document) is not fetched."""
    import io
    import re
    import zipfile

    from docx import Document
    from docx.shared import Inches
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (10, 10), "red").save(picture, "PNG")
    picture.seek(0)
    document = Document()
    document.add_paragraph("Confidential memo text.")
    document.add_picture(picture, width=Inches(1))
    embedded = tmp_path / "embedded.docx"
    document.save(str(embedded))
    linked = tmp_path / "linked.docx"
    image_rel = re.compile(r'(<Relationship Id="rId\d+" Type="[^"]*/image" Target=")[^"]*(")')
    with (
        zipfile.ZipFile(embedded) as source,
        zipfile.ZipFile(linked, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/_rels/document.xml.rels":
                rels, n = image_rel.subn(
                    rf'\g<1>{PUBLIC[0]}" TargetMode="External\g<2>', data.decode()
                )
                assert n == 1
                data = rels.encode()
            elif item.filename == "word/document.xml":
                assert b"r:embed=" in data
                data = data.replace(b"r:embed=", b"r:link=")
            target.writestr(item, data)
    assert [p.text for p in converter.convert(linked).pieces] == ["Confidential memo text."]
    assert network_guard.violations == []
