"""OCR on this machine: pages per second and character error rate.

Real prose (MuSiQue's Wikipedia paragraphs from ``../shared/data``) is typeset into a
PDF with reportlab (11 pt Helvetica, A4, wrapped paragraphs), each page rasterised with
pypdfium2 at ``--dpi`` (a scan), and read back with Fathom's OCR
(``app/ingest/convert/ocr.py``: RapidOCR, PP-OCRv6 small models from its wheel, on
onnxruntime) at Fathom's render scale. Printed: seconds per page (median, p95), pages
per second, and the character error rate (Levenshtein distance over the length of the
typeset text, whitespace collapsed), per page and over all pages. Run:
``.venv/bin/python tests/bench/bench_ocr.py [--pages 8] [--dpi 150]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from locate_data import shared_data_dir  # noqa: E402
from scanned_files import edit_distance  # noqa: E402

from app.ingest.convert.ocr import PageReader  # noqa: E402


def typeset(paragraphs: list[str]) -> tuple[bytes, list[str]]:
    """A PDF of the paragraphs, and the text of each page as typeset (from its text layer)."""
    import pypdfium2
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    out = io.BytesIO()
    style = getSampleStyleSheet()["BodyText"]
    style.fontName, style.fontSize, style.leading = "Helvetica", 11, 15
    SimpleDocTemplate(out, pagesize=A4).build([Paragraph(p, style) for p in paragraphs])
    pdf = out.getvalue()
    document = pypdfium2.PdfDocument(pdf)
    try:
        texts = [document[i].get_textpage().get_text_range() for i in range(len(document))]
    finally:
        document.close()
    return pdf, texts


def scans(pdf: bytes, dpi: int) -> list[np.ndarray]:
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        return [
            np.asarray(document[i].render(scale=dpi / 72).to_pil().convert("RGB"))
            for i in range(len(document))
        ]
    finally:
        document.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--dpi", type=int, default=150, help="the scan's resolution")
    args = parser.parse_args()
    corpus = json.loads((shared_data_dir() / "musique" / "corpus.json").read_text(encoding="utf-8"))
    paragraphs = [
        f"{item['title']}. {item['text']}".replace("&", "&amp;").replace("<", "&lt;")
        for item in corpus
    ]
    pdf, texts = typeset(paragraphs[: args.pages * 6])
    images = scans(pdf, args.dpi)[: args.pages]
    texts = texts[: len(images)]
    print(
        f"{len(images)} pages of MuSiQue prose, 11 pt, scanned at {args.dpi} dpi; {os.cpu_count()} CPUs"
    )
    reader = PageReader()
    started = time.perf_counter()
    reader.read(images[0])  # loads the models
    print(f"models loaded and first page read in {time.perf_counter() - started:.1f} s")
    seconds, errors, lengths = [], [], []
    for image, truth in zip(images, texts, strict=True):
        started = time.perf_counter()
        found = reader.read(image)
        seconds.append(time.perf_counter() - started)
        length = len(" ".join(truth.split()))
        errors.append(edit_distance(found, truth))
        lengths.append(length)
        print(
            f"  page {len(seconds)}: {seconds[-1]:.2f} s, {length} characters, CER {errors[-1] / max(1, length):.3f}"
        )
    p95 = float(np.percentile(seconds, 95))
    print(
        f"per page: median {statistics.median(seconds):.2f} s, p95 {p95:.2f} s "
        f"({1 / statistics.median(seconds):.2f} pages/s); "
        f"character error rate {sum(errors) / sum(lengths):.4f} over {sum(lengths):,} characters"
    )


if __name__ == "__main__":
    main()
