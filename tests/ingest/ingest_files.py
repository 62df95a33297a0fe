"""Real files of every kind for the ingest tests, made on the spot."""

from __future__ import annotations

import shutil
from pathlib import Path

from app.core.events import IngestEvent
from app.core.paths import AppPaths

# A spread of the Milvus docs used by the module-scoped ingests.
MILVUS_SUBSET = (
    "userGuide/manage-partitions.md",
    "userGuide/use-partition-key.md",
    "about/overview.md",
    "reference/sys_config/configure_tls.md",
    "adminGuide/upgrade_milvus_embedded.md",
    "fragments/faq_recall_rate_sq8_sq8h.md",
    "fragments/multiple_sdk.md",
)


def paths_in(root: Path) -> AppPaths:
    return AppPaths(
        config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache"
    ).ensure()


async def ingest_saying(
    home: Path, folder: Path, collection: str
) -> tuple[list[IngestEvent], list[str]]:
    """Ingest ``folder`` into a library of its own at ``home``: every event, and each
    progress line said while a file was read ("x.pdf: OCR, page 1 of 3")."""
    from app.core.events import IngestProgress
    from app.core.settings import Settings
    from app.ingest.library import Library

    library = Library.open(Settings(), paths_in(home))
    try:
        events = [event async for event in library.ingest([folder], collection)]
    finally:
        await library.aclose()
    return events, [e.ocr for e in events if isinstance(e, IngestProgress) and e.ocr]


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly Report", level=1)
    document.add_paragraph("This report covers the northern region.")
    document.add_heading("Budget", level=2)
    document.add_paragraph("The zebrafish hatchery budget rose by seventeen percent this quarter.")
    document.save(str(path))
    return path


def make_pptx(path: Path) -> Path:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Field Observations"
    slide.placeholders[
        1
    ].text = "Aurora borealis sightings doubled over the tundra station in March."
    deck.save(str(path))
    return path


def make_xlsx(path: Path) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Part", "Count", "Colour"])
    sheet.append(["Sprocket", 42, "Vermilion"])
    sheet.append(["Flange", 7, "Chartreuse"])
    book.save(str(path))
    return path


def make_html(path: Path) -> Path:
    path.write_text(
        "<html><head><title>Lighthouse Log</title></head><body>"
        "<h1>Lighthouse Log</h1><h2>Storms</h2>"
        "<p>The keeper recorded a marmalade-coloured fog bank rolling in at dusk.</p>"
        "</body></html>",
        encoding="utf-8",
    )
    return path


def make_office_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "docx": make_docx(folder / "report.docx"),
        "pptx": make_pptx(folder / "slides.pptx"),
        "xlsx": make_xlsx(folder / "parts.xlsx"),
        "html": make_html(folder / "log.html"),
    }


def make_encrypted_pdf(source: Path, target: Path) -> Path:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(source))
    writer.encrypt("a secret password")
    with target.open("wb") as handle:
        writer.write(handle)
    return target


def copy_subset(
    shared_data: Path, target: Path, names: tuple[str, ...] = MILVUS_SUBSET
) -> list[Path]:
    copied = []
    for name in names:
        source = shared_data / "milvus-docs" / name
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        copied.append(dest)
    return copied
