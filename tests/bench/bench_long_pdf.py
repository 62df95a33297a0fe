"""A long PDF read at once or a window of pages at a time: time and peak memory, each in
a fresh process (the conversion worker's share: Docling and the chunker).

    .venv/bin/python tests/bench/bench_long_pdf.py [--pages 400]

The PDF is the shared WhatisMilvus.pdf repeated to ``--pages`` pages."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def measure(path: str, window: int) -> dict[str, float]:
    from app.ingest.chunking import chunk_token_limit
    from app.ingest.convert import docling_files
    from app.ingest.convert.converter import Converter, ConverterConfig
    from app.ingest.embedder import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    config = ConverterConfig(
        tokenizer_json=embedder.tokenizer.to_str(),
        max_tokens=chunk_token_limit(embedder.max_tokens, 256),
    )
    converter = Converter(config)
    from locate_data import shared_data_dir

    converter.convert(shared_data_dir() / "pdf" / "WhatisMilvus.pdf")  # warm: models, imports
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    docling_files.PDF_WINDOW_PAGES = window
    started = time.perf_counter()
    document = converter.convert(Path(path))
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": took,
        "peak_mb": peak / 1024,
        "growth_mb": (peak - before) / 1024,
        "chunks": len(document.pieces),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--measure", nargs=2, metavar=("PDF", "WINDOW"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], int(args.measure[1]))))
        return
    import pypdfium2
    from locate_data import shared_data_dir

    source = pypdfium2.PdfDocument(str(shared_data_dir() / "pdf" / "WhatisMilvus.pdf"))
    out = pypdfium2.PdfDocument.new()
    while len(out) < args.pages:
        out.import_pages(source)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "long.pdf")
        out.save(path)
        print(f"a {len(out)}-page PDF (WhatisMilvus.pdf repeated), each reading in a fresh process")
        for label, window in (("at once", 1_000_000), ("50-page windows (Fathom)", 50)):
            done = subprocess.run(
                [sys.executable, __file__, "--measure", path, str(window)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"  {label:26} {r['seconds']:6.1f} s   peak RSS {r['peak_mb']:6.0f} MB "
                f"(+{r['growth_mb']:.0f} MB for this file)   {r['chunks']:.0f} chunks"
            )


if __name__ == "__main__":
    main()
