"""CSV conversion: Fathom's own reader beside Docling's, on one generated file, each in a
fresh process: seconds, peak memory, chunks, and whether the chunks are the same.

    .venv/bin/python tests/bench/bench_csv.py [--rows 80000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def write_csv(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("id,name,city,amount,notes\n")
        for i in range(rows):
            out.write(
                f'{i},Name {i},City {i * 7 % 500},{i * 3.7:.2f},"some note about row {i}, with words"\n'
            )


def measure(reader: str, path: Path) -> dict[str, object]:
    """In this (fresh) process: convert a tiny CSV first (imports, models), then ``path``."""
    from app.ingest.chunking import chunk_token_limit
    from app.ingest.convert.converter import Converter, ConverterConfig
    from app.ingest.embedder import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    converter = Converter(
        ConverterConfig(
            tokenizer_json=embedder.tokenizer.to_str(),
            max_tokens=chunk_token_limit(embedder.max_tokens, 256),
        )
    )
    convert = converter.convert if reader == "fathom" else converter._docling.convert
    tiny = path.with_name("tiny.csv")
    tiny.write_text("a,b\n1,2\n", encoding="utf-8")
    convert(tiny)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = convert(path)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    digest = hashlib.sha256(
        json.dumps([(p.text, p.embed_text) for p in document.pieces]).encode()
    ).hexdigest()
    return {
        "seconds": seconds,
        "peak_mib": peak / 1024,
        "grew_mib": (peak - before) / 1024,
        "chunks": len(document.pieces),
        "digest": digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=80_000)
    parser.add_argument("--measure", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.csv"
        write_csv(path, args.rows)
        size_mb = path.stat().st_size / 2**20
        print(
            f"CSV of {args.rows:,} rows, 5 columns, {size_mb:.1f} MB; each reader in a fresh process"
        )
        results = {}
        for reader in ("docling", "fathom"):
            done = subprocess.run(
                [sys.executable, __file__, "--measure", reader, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            results[reader] = json.loads(done.stdout.strip().splitlines()[-1])
            r = results[reader]
            print(
                f"  {reader:8} {r['seconds']:6.1f} s   peak RSS {r['peak_mib']:6.0f} MiB "
                f"(+{r['grew_mib']:.0f} MiB for this file)   {r['chunks']:,} chunks"
            )
        d, f = results["docling"], results["fathom"]
        print(f"  same chunks: {'yes' if d['digest'] == f['digest'] else 'NO'}")
        time_ratio = float(f["seconds"]) / float(d["seconds"])
        memory_ratio = float(f["grew_mib"]) / max(float(d["grew_mib"]), 1.0)
        print(
            f"  Fathom / Docling: time {time_ratio:.2f}x, memory for the file {memory_ratio:.2f}x"
        )


if __name__ == "__main__":
    main()
