"""How fast a model would answer on this machine: measured once with the starter model,
scaled to each model's file size (issue 32: recommend by speed, not memory alone).

The starter (SmolLM2-135M, ~100 MB) reads a 128-token prompt and makes 16 tokens, best of
two, with the threads research uses, in a child process at low priority (the window stays
responsive; about a second). A token's time has a part that grows with the
weights read (nearly all of a large model's) and a part that does not (graph building,
sampling, attention over a short context): at the starter's size, measured here side by
side with Qwen2.5-0.5B (491 MB), that fixed part is 0.70 of a prompt token's time and
0.26 of a generated token's. So for a model of F bytes, a token takes the starter's time
× (fixed + (1 − fixed) × F / starter's F). A deep answer reads about 3,300 prompt tokens
and writes about 300 (MuSiQue, Qwen2.5-0.5B, deep mode, median over 20 questions).

The figure is cached under the cache folder, measured again when the machine, the thread
count or llama.cpp changes. It is measured only while the computer is otherwise quiet: with
anything else on the cores, llama.cpp's spinning threads slow several-fold (measured beside a
test run: 9 generated tokens per second instead of 124), so a busy machine postpones the
measurement (nothing is kept; the next Models dialog or first run tries again), and one
where other work took the cores during the measurement throws the figure away. Research on
the CPU is measured (``n_gpu_layers`` 0, the default). ``FATHOM_MEASURE_SPEED=0`` turns the
measurement off (the test suite does, so no window test runs a model)."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SPEED_FILE = "machine-speed.json"
PROMPT_TOKENS = 128
GENERATED_TOKENS = 16
REPEATS = 2
MEASURE_TIMEOUT_S = 120.0
QUIET_CORES = 0.5  # other work using less than half a core on average counts as quiet
QUIET_SAMPLE_S = 0.5  # how long the machine is watched before measuring
MEASURE_ENV = "FATHOM_MEASURE_SPEED"  # "0": never measure (kept figures are still used)
# of a token's time at the starter's size, the part that does not grow with the model
# (fitted from the starter and Qwen2.5-0.5B measured side by side on the development machine)
FIXED_SHARE_PROMPT = 0.70
FIXED_SHARE_GENERATION = 0.26
# a deep answer's model work (median of 20 MuSiQue questions with Qwen2.5-0.5B, deep mode)
DEEP_PROMPT_TOKENS = 3300
DEEP_GENERATED_TOKENS = 300
ANSWER_WITHIN_S = 150.0  # "about two minutes": the largest model answering a deep question within it is recommended
_TEXT = (
    "The committee reviewed the harbour survey and the tide tables, then asked which records of "
    "the spring tide at Skerry Point were kept, by whom, and for how long they were to be kept. "
) * 30


log = logging.getLogger(__name__)


class MachineBusy(RuntimeError):
    """Other work used the cores: a measurement now would be several times too slow."""


@dataclass(frozen=True)
class Speed:
    """The starter's speed on this machine."""

    prompt_tps: float  # prompt tokens read per second
    generation_tps: float  # tokens generated per second
    model_bytes: int  # the starter's file size
    threads: int
    machine: str  # what it was measured on: a change measures again

    def answer_seconds(self, model_bytes: int) -> float:
        """About how long a deep answer takes with a model of ``model_bytes``."""
        growth = max(model_bytes, 1) / max(self.model_bytes, 1)
        prompt_token = (FIXED_SHARE_PROMPT + (1 - FIXED_SHARE_PROMPT) * growth) / self.prompt_tps
        generated_token = (
            FIXED_SHARE_GENERATION + (1 - FIXED_SHARE_GENERATION) * growth
        ) / self.generation_tps
        return DEEP_PROMPT_TOKENS * prompt_token + DEEP_GENERATED_TOKENS * generated_token


def machine_key(threads: int) -> str:
    """What a measurement holds for: the processor, its cores, the threads and llama.cpp's version."""
    import platform

    try:
        import llama_cpp

        version = str(getattr(llama_cpp, "__version__", ""))
    except ImportError:
        version = ""
    return f"{platform.machine()} {platform.processor()} {os.cpu_count()} cores, {threads} threads, llama.cpp {version}"


def research_threads(n_threads: int) -> int:
    """The threads llama.cpp runs with for research (0 in the settings: all cores)."""
    return n_threads if n_threads > 0 else (os.cpu_count() or 1)


def cached_speed(cache_dir: Path, threads: int) -> Speed | None:
    """The measurement kept for this machine and thread count, if there is one."""
    try:
        data = json.loads((cache_dir / SPEED_FILE).read_text(encoding="utf-8"))
        speed = Speed(**data)
    except (OSError, ValueError, TypeError):
        return None
    if speed.machine != machine_key(threads) or speed.prompt_tps <= 0 or speed.generation_tps <= 0:
        return None
    return speed


def measure_speed(starter: Path, threads: int, *, max_others: float = QUIET_CORES) -> Speed:
    """Time the starter reading a prompt and generating, in a child process at low priority
    (llama.cpp's threads would take every core from the window for that second). Raises
    :class:`MachineBusy` when other work used ``max_others`` cores or more meanwhile."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_measure_in_child, args=(str(starter), threads, max_others, send), daemon=True
    )
    child.start()
    send.close()
    try:
        if not receive.poll(MEASURE_TIMEOUT_S):
            raise RuntimeError("measuring the starter model took too long")
        result = receive.recv()
    except EOFError:
        raise RuntimeError("measuring the starter model failed") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
        receive.close()
    if isinstance(result, Exception):
        raise result
    speed: Speed = result
    return speed


def _measure_in_child(starter: str, threads: int, max_others: float, send: Any) -> None:
    try:
        os.nice(10)
    except (AttributeError, OSError):  # Windows: no nice
        pass
    try:
        send.send(_measure(Path(starter), threads, max_others))
    except MachineBusy as busy:
        send.send(busy)
    except Exception as exc:  # said to the parent, which keeps no figure
        send.send(RuntimeError(f"measuring the starter model failed: {exc}"))


def _measure(starter: Path, threads: int, max_others: float) -> Speed:
    from llama_cpp import Llama

    model = Llama(
        model_path=str(starter),
        n_ctx=1024,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    try:
        tokens = model.tokenize(_TEXT.encode())[:PROMPT_TOKENS]
        best_prompt = best_generation = float("inf")
        watch = OthersLoad()
        for _ in range(REPEATS):
            model.reset()
            started = time.perf_counter()
            model.eval(tokens)
            best_prompt = min(best_prompt, time.perf_counter() - started)
            started = time.perf_counter()
            for _ in range(GENERATED_TOKENS):
                model.eval([tokens[len(tokens) // 2]])  # one decoding step each
            best_generation = min(best_generation, time.perf_counter() - started)
        others = watch.cores()
        if others >= max_others:
            raise MachineBusy(f"other work used {others:.1f} cores while the starter was measured")
    finally:
        model.close()
    return Speed(
        prompt_tps=len(tokens) / best_prompt,
        generation_tps=GENERATED_TOKENS / best_generation,
        model_bytes=starter.stat().st_size,
        threads=threads,
        machine=machine_key(threads),
    )


class OthersLoad:
    """How many cores other processes used since this was made: the whole machine's busy
    time less this process's own (all its threads), over the wall time between."""

    def __init__(self) -> None:
        self._start = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float]:
        import psutil

        times = psutil.cpu_times()
        busy = sum(
            getattr(times, name, 0.0)
            for name in ("user", "nice", "system", "irq", "softirq", "steal")
        )
        return time.perf_counter(), busy, time.process_time()

    def cores(self) -> float:
        wall0, busy0, own0 = self._start
        wall1, busy1, own1 = self._now()
        if wall1 - wall0 <= 0:
            return 0.0
        return max(0.0, (busy1 - busy0) - (own1 - own0)) / (wall1 - wall0)


def machine_is_quiet(seconds: float = QUIET_SAMPLE_S) -> bool:
    """Whether other work used less than :data:`QUIET_CORES` over the next ``seconds``."""
    watch = OthersLoad()
    time.sleep(seconds)  # a sampling window, not a wait for something to happen
    return watch.cores() < QUIET_CORES


def measuring_allowed() -> bool:
    return os.environ.get(MEASURE_ENV, "1").strip() not in ("0", "false", "no", "off")


def machine_speed(cache_dir: Path, threads: int, *, measure: bool = True) -> Speed | None:
    """This machine's speed: kept from before, else measured now with the starter and kept
    (None without the starter or llama.cpp, when ``measure`` is off, or while the
    computer is busy with other work: measured another time)."""
    kept = cached_speed(cache_dir, threads)
    if kept is not None or not measure or not measuring_allowed():
        return kept
    from app.llm.starter import starter_model_path

    starter = starter_model_path()
    if starter is None:
        return None
    if not machine_is_quiet():
        log.info("speed not measured: the computer is busy with other work; measured another time")
        return None
    try:
        speed = measure_speed(starter, threads)
    except MachineBusy as busy:
        log.info("speed not kept: %s", busy)
        return None
    except (ImportError, OSError, ValueError, RuntimeError) as exc:
        log.info("speed not measured: %s", exc)
        return None
    keep_speed(cache_dir, speed)
    return speed


def keep_speed(cache_dir: Path, speed: Speed) -> None:
    """Keep a measurement for the next dialogs (a cache: losing it only measures again)."""
    from app.core.settings import write_atomic

    try:
        write_atomic(cache_dir / SPEED_FILE, json.dumps(asdict(speed)))
    except OSError as exc:
        log.info("speed not kept: %s", exc)


def about(seconds: float) -> str:
    """ "about 40 s", "about 3 min" per answer."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {round(seconds / 60):.0f} min"
