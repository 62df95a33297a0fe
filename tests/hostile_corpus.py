"""The red team's hostile files, generated small on disk (issue 33): decompression
bombs, page-tree bombs, deep nesting, one enormous line, a malformed mail, beside
good files that must still be indexed. ``scale`` shrinks the costly ones so CI can
afford them while each still does what it did to the machine (a bomb still grows
past a test's memory limit, a page tree still outlasts a test's time limit).

Used by ``tests/ingest/test_hostile_input.py`` and ``tests/bench/bench_hostile.py``."""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024


@dataclass(frozen=True)
class Scale:
    flate_mib: int  # the text operators one Flate stream inflates to
    page_levels: int  # a page tree of 10 ** page_levels pages (shared kids)
    flat_pages: int  # a page tree of this many real (empty) pages
    nested_divs: int
    oneline_kib: int  # embedding its chunks is what costs: 20 MB are 23,000 chunks
    mail_attachment_mib: int
    nesting: int  # Markdown quote depth
    list_nesting: int  # Markdown list depth (its size grows as the square of it)


FULL = Scale(
    flate_mib=1024,
    page_levels=6,
    flat_pages=200_000,
    nested_divs=100_000,
    oneline_kib=50 * 1024,
    mail_attachment_mib=80,
    nesting=100_000,
    list_nesting=5_000,
)
CI = Scale(
    flate_mib=256,
    page_levels=6,
    flat_pages=20_000,
    nested_divs=100_000,
    oneline_kib=512,
    mail_attachment_mib=20,
    nesting=20_000,
    list_nesting=3_000,
)

# each good file holds a word found nowhere else: a search for it must find its file
GOOD_FILES = {
    "good_notes.md": "# Field notes\n\nThe quillback rockfish survey counted forty fish near the reef.\n",
    "good_report.txt": "The zephyrine valve passed its pressure test at 40 bar on the second try.\n",
    "good_page.html": "<html><body><h1>Minutes</h1><p>The marmoset committee approved the budget.</p></body></html>",
}
GOOD_WORDS = {
    "good_notes.md": "quillback",
    "good_report.txt": "zephyrine",
    "good_page.html": "marmoset",
}


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF whose object ``i + 1`` is ``objects[i]``; object 1 is the catalog."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def flate_bomb_pdf(inflated_mib: int) -> bytes:
    """One page whose content stream is a few MB of Flate inflating to ``inflated_mib``
    MiB of text-drawing operators."""
    line = b"BT /F1 9 Tf 72 700 Td (bomb text that repeats) Tj ET\n"
    block = line * (MIB // len(line))
    packer = zlib.compressobj(9)
    compressed = b"".join(packer.compress(block) for _ in range(inflated_mib)) + packer.flush()
    stream = (
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed)
        + compressed
        + b"\nendstream"
    )
    return pdf_bytes(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            stream,
            FONT,
        ]
    )


def page_tree_bomb_pdf(levels: int) -> bytes:
    """A page tree claiming ``10 ** levels`` pages: each node lists one child ten times."""
    content = b"BT /F1 12 Tf 72 700 Td (page) Tj ET"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    # objects 2 .. levels + 1 are the tree's nodes, top down; then the leaf page, its content, the font
    leaf = levels + 2
    for level in range(levels):
        number = level + 2
        child = number + 1
        parent = b"" if level == 0 else b"/Parent %d 0 R " % (number - 1)
        kids = b" ".join([b"%d 0 R" % child] * 10)
        objects.append(
            b"<< /Type /Pages %s/Kids [%s] /Count %d >>" % (parent, kids, 10 ** (levels - level))
        )
    objects.append(
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
        b"/Contents %d 0 R >>" % (leaf - 1, leaf + 2, leaf + 1)
    )
    objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objects.append(FONT)
    return pdf_bytes(objects)


def many_pages_pdf(pages: int) -> bytes:
    """``pages`` real pages sharing one content stream: each takes its time to read."""
    content = b"BT /F1 12 Tf 72 700 Td (page) Tj ET"
    kids = b" ".join(b"%d 0 R" % (number + 5) for number in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        FONT,
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
    page += b"/Contents 3 0 R >>"
    objects.extend([page] * pages)
    return pdf_bytes(objects)


def nested_divs_html(depth: int) -> bytes:
    return b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


def one_line_text(kib: int) -> bytes:
    word = b"onelineword "
    return word * (kib * 1024 // len(word))


def malformed_mail(attachment_mib: int) -> bytes:
    """Broken encoded-words, a 200 KB header line and a large base64 attachment."""
    header_line = b"X-Long: " + b"a" * 200_000
    broken = b"Subject: =?utf-8?B?broken==?= =?x-unknown?Q?=ZZ=?= =?utf-8?q?=E2=82?= report\n"
    payload = base64.encodebytes(b"\x00\x01binary" * (attachment_mib * MIB // 8))
    return (
        b"From: =?utf-8?B?????==?= <a@example.com>\nTo: b@example.com\n"
        + broken
        + header_line
        + b"\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XYZ\n\n"
        + b"--XYZ\nContent-Type: text/plain; charset=utf-8\n\nSee attached.\n"
        + b"--XYZ\nContent-Type: application/octet-stream; name=blob.bin\n"
        + b"Content-Disposition: attachment; filename=blob.bin\nContent-Transfer-Encoding: base64\n\n"
        + payload
        + b"--XYZ--\n"
    )


def nested_list_markdown(depth: int) -> bytes:
    return "".join("  " * level + "- item\n" for level in range(depth)).encode()


def nested_quote_markdown(depth: int) -> bytes:
    return b">" * depth + b" quoted\n"


def write_hostile(folder: Path, scale: Scale = CI) -> dict[str, Path]:
    """Write the hostile files into ``folder``; returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "bomb_flate.pdf": flate_bomb_pdf(scale.flate_mib),
        "bomb_page_tree.pdf": page_tree_bomb_pdf(scale.page_levels),
        "many_pages.pdf": many_pages_pdf(scale.flat_pages),
        "nest_divs.html": nested_divs_html(scale.nested_divs),
        "oneline.txt": one_line_text(scale.oneline_kib),
        "malformed_huge.eml": malformed_mail(scale.mail_attachment_mib),
        "nest_list_lines.md": nested_list_markdown(scale.list_nesting),
        "nest_quote.md": nested_quote_markdown(scale.nesting),
    }
    written = {}
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        written[name] = path
    return written


def write_good(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, text in GOOD_FILES.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written[name] = path
    return written
