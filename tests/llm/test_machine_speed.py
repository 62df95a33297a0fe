"""Recommending by speed (issue 32): the starter's speed measured on this machine (real
llama.cpp, in a child process) only while nothing else uses the cores, kept, and scaled to
each model's size."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.paths import app_paths
from app.model_files.catalog import Catalog, CatalogEntry
from app.model_files.machine_fit import GIB, Machine, measure_machine
from app.model_files.machine_speed import (
    ANSWER_WITHIN_S,
    DEEP_GENERATED_TOKENS,
    DEEP_PROMPT_TOKENS,
    MEASURE_ENV,
    QUIET_CORES,
    SPEED_FILE,
    MachineBusy,
    OthersLoad,
    Speed,
    about,
    keep_speed,
    machine_key,
    machine_speed,
    measure_speed,
)
from app.model_files.model_inventory import recommend

SPIN = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


@pytest.fixture
def spinner() -> Iterator[subprocess.Popen[bytes]]:
    """Another program keeping one core busy, as a build or a second app would."""
    process = subprocess.Popen([sys.executable, "-c", SPIN])
    yield process
    process.kill()
    process.wait()


def test_the_starter_is_timed_in_a_child_process(starter_model_path: Path) -> None:
    speed = measure_speed(starter_model_path, 1, max_others=math.inf)
    assert speed.prompt_tps > 5 and speed.generation_tps > 1
    assert speed.model_bytes == starter_model_path.stat().st_size
    assert speed.threads == 1 and speed.machine == machine_key(1)


def test_other_work_on_the_cores_is_seen(spinner: subprocess.Popen[bytes]) -> None:
    watch = OthersLoad()
    sum(i * i for i in range(3_000_000))  # this process's own work is not counted as others'
    assert watch.cores() >= QUIET_CORES


def test_a_busy_computer_postpones_the_measurement_and_keeps_nothing(
    tmp_path: Path,
    starter_model_path: Path,
    spinner: subprocess.Popen[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MEASURE_ENV, "1")
    assert machine_speed(tmp_path, 1) is None
    assert not (tmp_path / SPEED_FILE).exists()
    with pytest.raises(MachineBusy, match="other work used"):  # busy during the timing itself
        measure_speed(starter_model_path, 1, max_others=QUIET_CORES)


def test_a_kept_figure_is_used_for_this_machine_and_thread_count_only(tmp_path: Path) -> None:
    speed = Speed(400.0, 120.0, model_bytes=100_000_000, threads=1, machine=machine_key(1))
    keep_speed(tmp_path, speed)
    assert machine_speed(tmp_path, 1) == speed  # kept: not measured again (measuring is off here)
    assert machine_speed(tmp_path, 2) is None  # another thread count is measured anew
    kept = tmp_path / SPEED_FILE
    kept.write_text(
        json.dumps({**json.loads(kept.read_text(encoding="utf-8")), "machine": "another"}), "utf-8"
    )
    assert machine_speed(tmp_path, 1) is None  # another computer, or llama.cpp
    kept.write_text("{not json", encoding="utf-8")
    assert machine_speed(tmp_path, 1) is None


def test_the_machine_carries_its_kept_speed_when_asked() -> None:
    paths = app_paths().ensure()
    speed = Speed(400.0, 120.0, model_bytes=100_000_000, threads=1, machine=machine_key(1))
    keep_speed(paths.cache_dir, speed)
    assert measure_machine(paths.models_dir).speed is None  # memory only: nothing is read or run
    assert measure_machine(paths.models_dir, cache_dir=paths.cache_dir, threads=1).speed == speed


def _speed(prompt_tps: float, generation_tps: float) -> Speed:
    return Speed(prompt_tps, generation_tps, model_bytes=100_000_000, threads=2, machine="test")


def test_an_answer_takes_longer_with_a_larger_model_and_the_starter_s_own_time_at_its_size() -> (
    None
):
    speed = _speed(300, 100)
    assert speed.answer_seconds(100_000_000) == pytest.approx(
        DEEP_PROMPT_TOKENS / 300 + DEEP_GENERATED_TOKENS / 100
    )
    times = [
        speed.answer_seconds(size)
        for size in (100_000_000, 500_000_000, 2_500_000_000, 5_000_000_000)
    ]
    assert times == sorted(times) and times[-1] > 10 * times[0]
    assert about(32) == "about 30 s" and about(140) == "about 2 min"


def _entry(entry_id: str, size_gb: float, ram_gb: float) -> CatalogEntry:
    return CatalogEntry(
        id=entry_id,
        name=entry_id,
        url=f"https://example.org/{entry_id}.gguf",
        file_name=f"{entry_id}.gguf",
        sha256="ab" * 32,
        size_bytes=int(size_gb * GIB),
        ram_gb=ram_gb,
        context=8192,
        license="Apache-2.0",
        reasoning=True,
    )


CATALOG = Catalog(
    (_entry("small", 1.0, 2.5), _entry("medium", 2.4, 4.5), _entry("large", 4.7, 8.0)), "test"
)


def test_the_largest_model_answering_in_about_two_minutes_is_recommended() -> None:
    """A 2-core laptop with 32 GB: by memory alone the 8 GB model was recommended."""
    roomy = dict(
        total_ram=32 * GIB,
        available_ram=24 * GIB,
        cpu_count=2,
        gpu_offload=False,
        free_disk=100 * GIB,
    )
    assert recommend(CATALOG, Machine(**roomy)).id == "large"  # speed unknown: memory decides
    slow = _speed(150, 50)
    assert slow.answer_seconds(CATALOG.entries[1].size_bytes) > ANSWER_WITHIN_S
    assert slow.answer_seconds(CATALOG.entries[0].size_bytes) <= ANSWER_WITHIN_S
    assert recommend(CATALOG, Machine(**roomy, speed=slow)).id == "small"
    fast = _speed(3000, 1000)
    assert recommend(CATALOG, Machine(**roomy, speed=fast)).id == "large"
    crawling = _speed(10, 2)  # none is quick: the quickest that fits
    assert recommend(CATALOG, Machine(**roomy, speed=crawling)).id == "small"

    assert about(95) == "about 2 min" and about(600) == "about 10 min" and about(2) == "about 5 s"
