"""How many threads and processes an ingest uses, sized to the machine.

Embedding is most of the work (about eight times the CPU of conversion on the
Milvus docs), and onnxruntime runs fastest as independent single-threaded runs:
one embedding thread per core, each with one intra-op thread (no spinning pool
to steal time from the converter), and one conversion process per eight
embedding threads. The converter shares the cores; it only runs while the
queue of converted chunks ahead of the embedder is short, so most of the time
every core embeds.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

EMBED_THREADS_PER_CONVERTER = 8


def cpu_cores() -> int:
    """The cores this process may run on: ``os.cpu_count()``, narrowed to the
    process's CPU affinity where the OS has one (a container's or taskset's limit)."""
    count = os.cpu_count() or 1
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            count = min(count, len(affinity(0)))
        except OSError:
            pass
    return max(1, count)


@dataclass(frozen=True)
class IngestThreads:
    embed: int  # embedding threads, each running one onnxruntime intra-op thread
    converters: int  # conversion worker processes


def ingest_threads(requested: int = 0, cores: int | None = None) -> IngestThreads:
    """``requested`` embedding threads (0 or less: one per core), and the conversion
    processes that keep them fed."""
    available = cores if cores is not None else cpu_cores()
    embed = max(1, requested if requested > 0 else available)
    # never more conversion processes than cores, however many threads were asked for
    # (ingest.workers = 100000 once started 157 processes for five small files)
    converters = max(1, min(available, math.ceil(embed / EMBED_THREADS_PER_CONVERTER)))
    return IngestThreads(embed=embed, converters=converters)
