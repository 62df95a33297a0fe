"""Hostile input (issue 33): the red team's files, generated small on disk, ingested
beside good ones. Each bad file is named with a reason, each good one is searchable,
no process grows past the memory limit, and the library stays consistent."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from hostile_corpus import (
    CI,
    GOOD_WORDS,
    flate_bomb_pdf,
    nested_divs_html,
    one_line_text,
    write_good,
    write_hostile,
)
from ingest_files import paths_in

from app.core.errors import IngestError
from app.core.events import FileDone, IngestEvent, IngestFinished
from app.core.settings import Settings, replace_setting
from app.ingest.chunking.tokens import chunk_token_limit
from app.ingest.convert import ConversionPool, Converter, ConverterConfig
from app.ingest.convert.limits import CRASHED, TOO_LONG, TOO_MUCH_MEMORY, ConvertLimits
from app.ingest.convert.ocr import MAX_OCR_PIXELS, RENDER_SCALE, render_scale
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library

MEMORY_MB = 1024
# the watchdog reads a worker's memory every 0.1 s: a bomb growing ~500 MB/s
# (the Flate bomb here) can pass the limit by this much before it is killed
WATCHDOG_SLACK_MB = 256


def _limited(memory_mb: int = MEMORY_MB, seconds: int = 20) -> Settings:
    settings = replace_setting(Settings(), "ingest.memory_per_file_mb", memory_mb)
    return replace_setting(settings, "ingest.seconds_per_file", seconds)


@contextmanager
def _peak_memory_of_children() -> Iterator[dict[int, int]]:
    """Peak resident memory of each process this one starts, sampled every 20 ms."""
    peaks: dict[int, int] = {}
    stop = threading.Event()
    me = psutil.Process()

    def sample() -> None:
        while not stop.wait(0.02):
            for child in me.children(recursive=True):
                try:
                    peaks[child.pid] = max(peaks.get(child.pid, 0), child.memory_info().rss)
                except psutil.Error:
                    pass

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peaks
    finally:
        stop.set()
        sampler.join()


async def test_the_hostile_folder_ingests_in_bounded_memory_and_time_beside_good_files(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    docs = tmp_path / "docs"
    write_hostile(docs, CI)
    write_good(docs)
    library = Library.open(_limited(), paths_in(tmp_path / "home"), embedder=embedder)
    try:
        started = time.monotonic()
        with _peak_memory_of_children() as peaks:
            events: list[IngestEvent] = [e async for e in library.ingest([docs], "mixed")]
        took = time.monotonic() - started
        done = {Path(e.path).name: e for e in events if isinstance(e, FileDone)}
        end = events[-1]
        assert isinstance(end, IngestFinished)

        for name in GOOD_WORDS:
            assert done[name].status == "indexed", (name, done[name])
        # the bombs are named with the limit they hit; the rest of the bad files with their reason
        assert done["bomb_flate.pdf"].reason.startswith(TOO_MUCH_MEMORY), done["bomb_flate.pdf"]
        assert done["nest_divs.html"].reason.startswith(TOO_LONG), done["nest_divs.html"]
        assert done["many_pages.pdf"].reason.startswith(TOO_LONG), done["many_pages.pdf"]
        for name in ("bomb_page_tree.pdf", "nest_list_lines.md", "nest_quote.md"):
            assert done[name].status == "failed" and done[name].reason, (name, done[name])
        assert done["oneline.txt"].status == "indexed", done["oneline.txt"]

        assert peaks, "no worker process was seen"
        assert max(peaks.values()) < (MEMORY_MB + WATCHDOG_SLACK_MB) * 2**20, {
            pid: peak // 2**20 for pid, peak in peaks.items()
        }
        assert took < 180, took

        for name, word in GOOD_WORDS.items():
            (hits,) = await library.search([word], collections=["mixed"])
            assert hits and Path(hits[0].chunk.path).name == name, (word, hits[:1])
        assert (await library.check()).consistent
    finally:
        await library.aclose()


def _pool(embedder: OnnxMiniLMEmbedder, limits: ConvertLimits, workers: int = 2) -> ConversionPool:
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    return ConversionPool(config, workers=workers, limits=limits)


async def test_a_killed_worker_blames_only_its_own_file(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """A bomb kills its worker while the other worker reads a good file: the good file
    is read (a shared process pool broke for every file in flight)."""
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(flate_bomb_pdf(256))
    good = tmp_path / "long.txt"  # several seconds of reading
    good.write_text(
        "\n\n".join(f"Paragraph {i} about the harbour of Skerry Point." for i in range(60_000))
    )
    pool = _pool(embedder, ConvertLimits(memory_mb=768, seconds=120))
    try:
        await pool.start()
        bombed, read = await asyncio.gather(pool.convert(bomb), pool.convert(good))
        assert bombed.document is None and bombed.error.startswith(TOO_MUCH_MEMORY), bombed
        assert read.document is not None and len(read.document.pieces) > 100, read.error
        # the pool goes on with a fresh worker
        again = await pool.convert(good)
        assert again.document is not None, again.error
    finally:
        pool.shutdown()


async def test_a_worker_killed_from_outside_is_named_a_crash_and_replaced(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """The operating system's out-of-memory killer, say: the file is named, the next one read."""
    slow = tmp_path / "nest.html"
    slow.write_bytes(nested_divs_html(100_000))
    good = tmp_path / "good.md"
    good.write_text("# Tides\n\nThe spring tide peaks at 5.2 metres.\n")
    pool = _pool(embedder, ConvertLimits(seconds=120), workers=1)
    try:
        await pool.start()
        reading = asyncio.create_task(pool.convert(slow))
        me = psutil.Process()
        deadline = time.monotonic() + 30
        busy: list[psutil.Process] = []
        while not busy and time.monotonic() < deadline:  # the worker, once it is busy reading
            await asyncio.sleep(0.1)
            busy = [c for c in me.children() if c.cpu_percent(interval=0.2) > 50]
        assert busy, "no worker got busy"
        for worker in busy:
            worker.kill()
        outcome = await asyncio.wait_for(reading, 30)
        assert outcome.document is None and outcome.error.startswith(CRASHED), outcome
        after = await pool.convert(good)
        assert after.document is not None, after.error
    finally:
        pool.shutdown()


async def test_a_text_file_on_one_line_is_read_in_bounded_memory(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """20 MB on one line: tokenized at once it took the converter past 2 GB (50 MB: a crash)."""
    line = tmp_path / "oneline.txt"
    line.write_bytes(one_line_text(20 * 1024))
    pool = _pool(embedder, ConvertLimits(memory_mb=1024, seconds=300), workers=1)
    try:
        await pool.start()
        outcome = await pool.convert(line)
        assert outcome.document is not None, outcome.error
        text = "".join(piece.text for piece in outcome.document.pieces)
        assert text.count("onelineword") == 20 * 1024 * 1024 // len("onelineword ")
    finally:
        pool.shutdown()


async def test_a_file_over_the_time_limit_is_skipped_with_the_time(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    slow = tmp_path / "nest.html"
    slow.write_bytes(nested_divs_html(100_000))
    limits = ConvertLimits(seconds=3, seconds_per_mb=0)
    pool = _pool(embedder, limits, workers=1)
    try:
        await pool.start()
        if sys.platform == "linux":  # the operating system's own ceiling, the watchdog's backstop
            ceilings = [c.rlimit(psutil.RLIMIT_AS)[0] for c in psutil.Process().children()]
            assert limits.address_space_bytes in ceilings, ceilings
        started = time.monotonic()
        outcome = await pool.convert(slow)
        assert time.monotonic() - started < 15
        assert outcome.error.startswith(f"{TOO_LONG} 3 seconds"), outcome
    finally:
        pool.shutdown()


async def test_a_file_the_converter_gave_up_on_is_not_read_again_until_it_changes_or_asked(
    tmp_path: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    bomb = docs / "bomb.pdf"
    bomb.write_bytes(flate_bomb_pdf(256))
    (docs / "good.md").write_text("# Tides\n\nThe spring tide peaks at 5.2 metres.\n")
    library = Library.open(_limited(memory_mb=768), paths_in(tmp_path / "home"), embedder=embedder)
    read: list[str] = []
    try:

        async def ingest(retry: bool = False) -> dict[str, FileDone]:
            pool = library._converter_pool()
            convert = pool.convert

            async def recording(path: Path, on_page: object = None) -> object:
                read.append(path.name)
                return await convert(path, on_page)  # type: ignore[arg-type]

            pool.convert = recording  # type: ignore[method-assign]
            try:
                events = [e async for e in library.ingest([docs], "tides", retry=retry)]
            finally:
                del pool.convert
            return {Path(e.path).name: e for e in events if isinstance(e, FileDone)}

        first = await ingest()
        assert first["bomb.pdf"].reason.startswith(TOO_MUCH_MEMORY) and read == [
            "bomb.pdf",
            "good.md",
        ]
        read.clear()
        second = await ingest()  # a re-scan: the bomb is named again, not read again
        assert read == [] and second["bomb.pdf"].status == "failed"
        assert second["bomb.pdf"].reason == first["bomb.pdf"].reason
        third = await ingest(retry=True)  # asked: read again
        assert read == ["bomb.pdf"] and third["bomb.pdf"].reason.startswith(TOO_MUCH_MEMORY)
        read.clear()
        with bomb.open("ab") as handle:  # changed: read again
            handle.write(b"\n% changed\n")
        await ingest()
        assert read == ["bomb.pdf"]
    finally:
        await library.aclose()


def test_an_image_too_large_for_ocr_is_refused_from_its_declared_size(
    tmp_path: Path, converter: Converter
) -> None:
    """60 million pixels of one colour: a few KB on disk, 180 MB once decoded to RGB."""
    from PIL import Image

    huge = tmp_path / "huge.png"
    Image.new("1", (10_000, 6_000)).save(huge)
    assert huge.stat().st_size < 1_000_000
    with pytest.raises(
        IngestError, match=r"10,000 × 6,000 pixels \(60 million\), more than the 50 million"
    ):
        converter.convert(huge)


def test_a_huge_pdf_page_is_rendered_for_ocr_within_the_pixel_limit() -> None:
    """A page's size is whatever the file says (14,400 points square is the format's most)."""
    assert render_scale(612, 792) == RENDER_SCALE  # a letter page: the usual 144 dpi
    scale = render_scale(14_400, 14_400)
    assert scale < RENDER_SCALE and (14_400 * scale) ** 2 <= MAX_OCR_PIXELS * 1.0001


def _zip_bomb(path: Path, member: str, inflated_mb: int) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        package.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with package.open(member, "w") as inflating:
            block = b"\0" * 2**20
            for _ in range(inflated_mb):
                inflating.write(block)


async def test_the_findings_handled_well_stay_handled(
    tmp_path: Path, shared_data: Path, embedder: OnnxMiniLMEmbedder
) -> None:
    """FIFOs, bit-flipped PDFs, zip bombs in Office files, a 400-megapixel PNG, binary data
    under text names: each named with a reason; odd but valid names are indexed."""
    from PIL import Image

    docs = tmp_path / "docs"
    docs.mkdir()
    os.mkfifo(docs / "pipe.txt")
    flipped = bytearray((shared_data / "pdf" / "WhatisMilvus.pdf").read_bytes())
    for offset in range(2000, len(flipped), 97):
        flipped[offset] ^= 0xFF
    (docs / "flipped.pdf").write_bytes(bytes(flipped))
    _zip_bomb(docs / "bomb.docx", "word/document.xml", 200)
    _zip_bomb(docs / "bomb.xlsx", "xl/workbook.xml", 200)
    Image.new("1", (20_000, 20_000)).save(docs / "huge.png")
    for name in ("binary.md", "binary.csv", "binary.html"):
        (docs / name).write_bytes(b"\x00\x01" + os.urandom(8190))
    odd_names = {
        'quote\'s "name".md': "albatross",
        "tab\there.md": "bittern",
        "semi;colon.md": "cormorant",
        "rtl\u202etxt.md": "dunlin",
        "emoji \U0001f600.md": "eider",
    }
    for name, word in odd_names.items():
        (docs / name).write_text(f"# Birds\n\nThe {word} was seen at dawn.\n", encoding="utf-8")

    library = Library.open(Settings(), paths_in(tmp_path / "home"), embedder=embedder)
    try:
        events = [e async for e in library.ingest([docs], "odd")]
        done = {Path(e.path).name: e for e in events if isinstance(e, FileDone)}
        for name in (
            "pipe.txt",
            "bomb.docx",
            "bomb.xlsx",
            "huge.png",
            "binary.md",
            "binary.csv",
            "binary.html",
        ):
            assert done[name].status in ("failed", "skipped") and len(done[name].reason) > 20, (
                name,
                done[name],
            )
        assert "Not a regular file" in done["pipe.txt"].reason
        assert "million pixels" in done["huge.png"].reason or "pixels" in done["huge.png"].reason
        # bit-flipped: read what can be read, or say why not
        assert done["flipped.pdf"].status == "indexed" or done["flipped.pdf"].reason, done[
            "flipped.pdf"
        ]
        for name, word in odd_names.items():
            assert done[name].status == "indexed", (name, done[name])
            (hits,) = await library.search([word], collections=["odd"])
            assert hits and Path(hits[0].chunk.path).name == name, (word, hits[:1])
        assert (await library.check()).consistent
    finally:
        await library.aclose()
