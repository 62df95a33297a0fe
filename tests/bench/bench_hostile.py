"""Hostile input: each file of the red team's corpus read by one converter worker
under the limits, with its peak resident memory, its time and what was said of it;
then the whole corpus, beside good files, ingested into a fresh library.

    .venv/bin/python tests/bench/bench_hostile.py [--scale ci|full] [--memory-mb 2048] [--seconds 120]

``full`` is the red team's sizes (a 1 GiB Flate bomb, 50 MB on one line, an 80 MB
mail attachment; a few minutes), ``ci`` what the tests ingest. Peak memory is sampled
every 20 ms from outside the worker (the watchdog itself reads it every 100 ms)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hostile_corpus import CI, FULL, write_good, write_hostile

from app.core.events import FileDone, IngestFinished
from app.core.paths import AppPaths
from app.core.settings import Settings, replace_setting
from app.ingest.chunking.tokens import chunk_token_limit
from app.ingest.convert import ConversionPool, ConverterConfig
from app.ingest.convert.limits import ConvertLimits
from app.ingest.embedder import OnnxMiniLMEmbedder
from app.ingest.library import Library


class PeakSampler:
    """Peak resident memory of this process's children while running."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.02):
            for child in me.children(recursive=True):
                try:
                    self.peak = max(self.peak, child.memory_info().rss)
                except psutil.Error:
                    pass

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


async def per_file(files: list[Path], limits: ConvertLimits, embedder: OnnxMiniLMEmbedder) -> None:
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    pool = ConversionPool(config, workers=1, limits=limits)
    await pool.start()
    print(f"{'file':24} {'MB on disk':>10} {'peak MB':>8} {'seconds':>8}  outcome")
    try:
        for path in files:
            started = time.monotonic()
            with PeakSampler() as sampler:
                outcome = await pool.convert(path)
            took = time.monotonic() - started
            said = (
                f"{len(outcome.document.pieces):,} chunks"
                if outcome.document
                else outcome.error[:70]
            )
            size = path.stat().st_size / 2**20
            print(
                f"{path.name:24} {size:10.1f} {sampler.peak / 2**20:8.0f} {took:8.1f}  {said}",
                flush=True,
            )
    finally:
        pool.shutdown()


async def whole_folder(
    folder: Path, home: Path, settings: Settings, embedder: OnnxMiniLMEmbedder
) -> None:
    paths = AppPaths(
        data_dir=home / "data", config_dir=home / "config", cache_dir=home / "cache"
    ).ensure()
    library = Library.open(settings, paths, embedder=embedder)
    try:
        started = time.monotonic()
        with PeakSampler() as sampler:
            events = [e async for e in library.ingest([folder], "hostile")]
        took = time.monotonic() - started
        end = events[-1]
        assert isinstance(end, IngestFinished)
        done = [e for e in events if isinstance(e, FileDone)]
        named = sum(1 for e in done if e.status in ("failed", "skipped") and e.reason)
        consistent = (await library.check()).consistent
        print(
            f"\nwhole folder: {end.indexed} indexed, {end.failed} failed, {end.skipped} skipped "
            f"({named} named with a reason) in {took:.1f} s; peak worker memory {sampler.peak / 2**20:.0f} MB; "
            f"library consistent: {consistent}"
        )
    finally:
        await library.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", choices=("ci", "full"), default="ci")
    parser.add_argument("--memory-mb", type=int, default=ConvertLimits().memory_mb)
    parser.add_argument("--seconds", type=int, default=int(ConvertLimits().seconds))
    parser.add_argument("--skip-folder", action="store_true", help="only the per-file table")
    args = parser.parse_args()
    limits = ConvertLimits(memory_mb=args.memory_mb, seconds=args.seconds)
    settings = replace_setting(Settings(), "ingest.memory_per_file_mb", args.memory_mb)
    settings = replace_setting(settings, "ingest.seconds_per_file", args.seconds)
    embedder = OnnxMiniLMEmbedder()
    with tempfile.TemporaryDirectory(prefix="fathom-hostile-") as tmp:
        folder = Path(tmp) / "docs"
        hostile = write_hostile(folder, FULL if args.scale == "full" else CI)
        good = write_good(folder)
        print(
            f"scale {args.scale}; limits: {limits.memory_mb:,} MB, {limits.seconds:.0f} s "
            f"+ {limits.seconds_per_mb:.0f} s/MB + {limits.seconds_per_ocr_page:.0f} s per OCR page\n"
        )
        asyncio.run(per_file([*hostile.values(), *good.values()], limits, embedder))
        if not args.skip_folder:
            asyncio.run(whole_folder(folder, Path(tmp) / "home", settings, embedder))


if __name__ == "__main__":
    main()
