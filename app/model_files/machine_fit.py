"""Does a model fit this machine? Memory measured now, the library's share kept aside.

A model needs its weights, its context's key/value cache and a little working
memory. Fathom itself needs room beside it for the library (the embedder,
Milvus Lite, Docling converting files, the window): :data:`LIBRARY_RESERVE`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.core.paths import AppPaths
from app.core.settings import Settings
from app.model_files.machine_speed import Speed

GIB = 1024**3
LIBRARY_RESERVE = int(
    1.5 * GIB
)  # embedder + Milvus Lite + Docling + the window, measured ~1.2 GiB during ingest
WORKING_MEMORY = int(0.3 * GIB)  # llama.cpp's compute buffers beyond weights and cache
RECOMMEND_SHARE = 0.75  # recommend what fits in this share of the total memory (the OS and other apps keep the rest)


@dataclass(frozen=True)
class Machine:
    total_ram: int
    available_ram: int
    cpu_count: int
    gpu_offload: bool  # llama.cpp was built with a GPU back end
    free_disk: int  # on the filesystem of Fathom's models folder
    speed: Speed | None = None  # the starter's measured speed (answer times scale from it)

    def describe(self) -> str:
        gpu = "GPU offload available" if self.gpu_offload else "CPU only"
        return (
            f"{self.total_ram / GIB:.0f} GB memory ({self.available_ram / GIB:.1f} GB free), "
            f"{self.cpu_count} cores, {gpu}, {self.free_disk / GIB:.0f} GB free disk"
        )


Verdict = Literal["fits", "tight", "too big", "unknown"]


@dataclass(frozen=True)
class Fit:
    verdict: Verdict
    reason: str

    @property
    def ok(self) -> bool:
        return self.verdict == "fits"


def measure_machine(
    models_dir: Path, *, cache_dir: Path | None = None, threads: int = 0
) -> Machine:
    """Memory, cores, GPU and disk now; with ``cache_dir``, also the speed of research with
    ``threads`` llama.cpp threads (0: all cores), measured once with the starter and kept."""
    import os

    import psutil

    from app.model_files.machine_speed import machine_speed, research_threads

    memory = psutil.virtual_memory()
    probe = models_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free_disk = shutil.disk_usage(probe).free
    except OSError:
        free_disk = 0
    return Machine(
        total_ram=int(memory.total),
        available_ram=int(memory.available),
        cpu_count=os.cpu_count() or 1,
        gpu_offload=gpu_offload_available(),
        free_disk=int(free_disk),
        speed=machine_speed(cache_dir, research_threads(threads))
        if cache_dir is not None
        else None,
    )


def measure_for_research(settings: Settings, paths: AppPaths) -> Machine:
    """:func:`measure_machine` for Fathom's models folder, with the speed of research as
    the settings run it (kept in the cache folder)."""
    return measure_machine(
        paths.models_dir, cache_dir=paths.cache_dir, threads=settings.model.llamacpp.n_threads
    )


def gpu_offload_available() -> bool:
    try:
        import llama_cpp
    except ImportError:
        return False
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except (AttributeError, OSError):
        return False


def memory_needed(file_size: int, kv_cache_bytes: int) -> int:
    """Weights + context cache + working memory, in bytes."""
    return file_size + kv_cache_bytes + WORKING_MEMORY


def judge_fit(needed: int, machine: Machine) -> Fit:
    """Whether a model needing ``needed`` bytes runs here beside the library."""
    if needed <= 0:
        return Fit("unknown", "memory needed unknown")
    need_gb = needed / GIB
    if needed + LIBRARY_RESERVE <= machine.available_ram:
        return Fit(
            "fits", f"needs {need_gb:.1f} GB of the {machine.available_ram / GIB:.1f} GB free"
        )
    if needed + LIBRARY_RESERVE <= machine.total_ram:
        return Fit(
            "tight",
            f"needs {need_gb:.1f} GB; {machine.available_ram / GIB:.1f} GB is free now (close other programs)",
        )
    gpu = (
        " (llama.cpp can offload layers to the GPU: model.llamacpp.n_gpu_layers)"
        if machine.gpu_offload
        else ""
    )
    return Fit(
        "too big", f"needs {need_gb:.1f} GB; this machine has {machine.total_ram / GIB:.0f} GB{gpu}"
    )


def recommendable(needed: int, machine: Machine) -> bool:
    """Fits in the share of memory Fathom recommends using, with room for the library."""
    return needed + LIBRARY_RESERVE <= machine.total_ram * RECOMMEND_SHARE
