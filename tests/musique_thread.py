"""A two-step question over real MuSiQue paragraphs (``2hop__243339_774871``), for
the follow-up tests: the first question's answer (Iron Maiden) is in one file, and
what the follow-up asks of it (where the band formed: Leyton) in another; the
follow-up names the band only as "that band", so it needs the first answer. The
question's 18 other paragraphs (distractors: other "Maiden" and "Japan" pages) are
files too."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from app.core.events import IngestFinished
from app.core.paths import AppPaths
from app.core.settings import Settings
from app.ingest.library import Library

QUESTION_ID = "2hop__243339_774871"
FIRST = "Who performed the live EP Maiden Japan?"
FOLLOW_UP = "Where was that band formed?"
ANSWER_FILE = "maiden-japan.md"  # names the band
FOLLOW_UP_FILE = "iron-maiden.md"  # where the band formed


def write_paragraphs(shared_data: Path, folder: Path) -> list[Path]:
    """The question's paragraphs, one Markdown file each (``# title`` then the text)."""
    questions = json.loads((shared_data / "musique" / "questions.json").read_text(encoding="utf-8"))
    (question,) = [q for q in questions if q["id"] == QUESTION_ID]
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for paragraph in question["paragraphs"]:
        name = re.sub(r"[^a-z0-9]+", "-", paragraph["title"].lower()).strip("-") + ".md"
        path = folder / name
        if path in written:  # two paragraphs of one page: one file
            path.write_text(
                path.read_text(encoding="utf-8") + "\n" + paragraph["paragraph_text"] + "\n"
            )
            continue
        path.write_text(
            f"# {paragraph['title']}\n\n{paragraph['paragraph_text']}\n", encoding="utf-8"
        )
        written.append(path)
    assert {p.name for p in written} >= {ANSWER_FILE, FOLLOW_UP_FILE}
    return written


def ingest_paragraphs(
    shared_data: Path, root: Path
) -> tuple[AppPaths, list[Path], IngestFinished | None]:
    """The question's paragraphs written under ``root`` and ingested into a real library
    there (collection "music"): its paths, the files, and the ingest's last event."""
    paths = AppPaths(
        config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache"
    ).ensure()
    files = write_paragraphs(shared_data, root / "paragraphs")

    async def ingest() -> IngestFinished | None:
        library = Library.open(Settings(), paths)
        try:
            return [e async for e in library.ingest(files, "music")][-1]  # type: ignore[return-value]
        finally:
            await library.aclose()

    return paths, files, asyncio.run(ingest())
