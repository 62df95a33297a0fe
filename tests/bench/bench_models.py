"""Model manager figures: GGUF header reads, listing the models, download throughput
against a copy-and-hash floor, and cancel latency against a stalled server.

    python tests/bench/bench_models.py [--gguf FILE ...] [--repeats N]

All on this machine: files are served by the loopback test server (tests/file_server.py).
Medians over ``--repeats`` runs, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: file_server, model_files


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ms"


def bench_headers(files: list[Path], repeats: int) -> None:
    from app.model_files.gguf_info import read_gguf_info

    print("GGUF header read (median)")
    for path in files:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            info = read_gguf_info(path)
            samples.append(time.perf_counter() - started)
        size = path.stat().st_size / 1024**2
        print(
            f"  {path.name:<45} {size:7.0f} MB  {_median_ms(samples):>9}  ({info.name}, {info.quantization})"
        )


def bench_listing(files: list[Path], repeats: int, root: Path) -> None:
    from app.core.paths import AppPaths
    from app.core.settings import Settings
    from app.model_files.catalog import load_catalog
    from app.model_files.machine_fit import measure_machine
    from app.model_files.model_inventory import list_models

    home = root / "home"
    folder = home / ".local" / "share" / "nomic.ai" / "GPT4All"
    folder.mkdir(parents=True)
    for path in files:
        os.symlink(path, folder / path.name)
    paths = AppPaths(root / "c", root / "d", root / "k").ensure()
    samples = []
    rows = []
    for _ in range(repeats):
        started = time.perf_counter()
        catalog = load_catalog(environ={})
        rows = list_models(Settings(), paths, catalog, measure_machine(paths.models_dir), home=home)
        samples.append(time.perf_counter() - started)
    print(
        f"Listing the models ({len(rows)} rows, {len(files)} GGUF in a GPT4All folder): {_median_ms(samples)}"
    )


def bench_download(source: Path, repeats: int, root: Path) -> None:
    from file_server import FileServer
    from model_files import file_sha256

    from app.model_files.download import download_file

    expected = file_sha256(source)
    size = source.stat().st_size
    floor, downloads = [], []
    with FileServer() as server:
        server.add("/model.gguf", source)
        for i in range(repeats):
            copy = root / f"copy-{i}.gguf"
            started = time.perf_counter()
            shutil.copyfile(source, copy)
            assert file_sha256(copy) == expected
            floor.append(time.perf_counter() - started)
            copy.unlink()
            target = root / f"download-{i}.gguf"
            started = time.perf_counter()
            download_file(server.url("/model.gguf"), target, sha256=expected, size_bytes=size)
            downloads.append(time.perf_counter() - started)
            target.unlink()
    mb = size / 1024**2
    f, d = statistics.median(floor), statistics.median(downloads)
    print(f"Download of {source.name} ({mb:.0f} MB) over loopback, verified (median of {repeats})")
    print(f"  copy + sha256 (the floor)   {mb / f:7.0f} MB/s  {f:6.2f} s")
    print(f"  download_file               {mb / d:7.0f} MB/s  {d:6.2f} s  ({d / f:.2f}x the floor)")


def bench_cancel(repeats: int, root: Path) -> None:
    from file_server import FileServer

    from app.model_files.download import DownloadCancelled, download_file

    samples = []
    with FileServer() as server:
        server.add("/stalled.bin", os.urandom(4 << 20), delay_per_chunk_s=5.0)
        for i in range(repeats):
            cancel = threading.Event()
            set_at = [0.0]

            def fire(cancel: threading.Event = cancel, set_at: list[float] = set_at) -> None:
                set_at[0] = time.perf_counter()
                cancel.set()

            timer = threading.Timer(0.3, fire)  # the client is blocked in a read by then
            timer.start()
            try:
                download_file(
                    server.url("/stalled.bin"),
                    root / f"stalled-{i}.bin",
                    sha256="0" * 64,
                    cancel=cancel,
                )
            except DownloadCancelled:
                samples.append(time.perf_counter() - set_at[0])
            finally:
                timer.cancel()
    print(
        f"Cancel against a stalled server (5 s between chunks): {_median_ms(samples)} from cancel to return"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--gguf", type=Path, action="append", default=[], help="GGUF files to read (repeatable)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from app.llm.starter import starter_model_path

    starter = starter_model_path()
    files = ([starter] if starter else []) + list(args.gguf)
    if not files:
        sys.exit("no GGUF file: install the starter model or pass --gguf FILE")
    with tempfile.TemporaryDirectory(prefix="bench-models-") as tmp:
        root = Path(tmp)
        bench_headers(files, max(args.repeats, 10))
        bench_listing(files, args.repeats, root)
        bench_download(max(files, key=lambda p: p.stat().st_size), args.repeats, root)
        bench_cancel(args.repeats, root)


if __name__ == "__main__":
    main()
