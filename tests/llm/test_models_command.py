"""`fathom models` as a user runs it: list what is here and what the catalog offers,
download a model from a loopback server (verified), make it the research model, ask a
question with it, see it in History and `fathom doctor`, remove it. The catalog is a
test catalog (FATHOM_MODEL_CATALOG) whose model is the starter's real GGUF file."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fathom_process import MODULE, REPO, run_fathom
from file_server import FileServer

from app.core.paths import app_paths
from app.core.settings import Settings, load_settings, replace_setting, save_settings
from app.model_files.machine_speed import Speed, keep_speed, machine_key

pytestmark = pytest.mark.slow

NOTE = (
    "The harbour office of Port Essel keeps its tide tables in a green ledger.\n\n"
    "The ledger was moved to the lighthouse archive in 1987 after the flood."
)


@pytest.fixture
def server(starter_model_path: Path) -> Iterator[FileServer]:
    with FileServer() as served:
        served.add("/files/tiny-research.gguf", starter_model_path)
        yield served


def write_catalog(path: Path, server: FileServer, sha256: str, size: int) -> Path:
    models = [
        {
            "id": "tiny",
            "name": "Tiny research model",
            "url": server.url("/files/tiny-research.gguf"),
            "sha256": sha256,
            "size_bytes": size,
            "ram_gb": 0.6,
            "context": 8192,
            "license": "Apache-2.0",
            "reasoning": False,
            "why": "A test model served on loopback.",
        },
        {
            "id": "corrupt",
            "name": "Corrupt download",
            "url": server.url("/files/tiny-research.gguf"),
            "file": "corrupt.gguf",
            "sha256": "f" * 64,
            "size_bytes": size,
            "ram_gb": 0.6,
            "context": 8192,
            "license": "Apache-2.0",
            "reasoning": False,
        },
    ]
    path.write_text(json.dumps({"version": 1, "models": models}), encoding="utf-8")
    return path


def test_download_use_ask_and_remove_a_model_from_the_command_line(
    server: FileServer, starter_model_path: Path, starter_sha256: str, tmp_path: Path
) -> None:
    size = starter_model_path.stat().st_size
    catalog = write_catalog(tmp_path / "catalog.json", server, starter_sha256, size)
    home = tmp_path / "home"  # no GPT4All or LM Studio folders here
    home.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "FATHOM_MODEL_CATALOG": str(catalog),
        "HOME": str(home),
    }
    env.pop("XDG_DATA_HOME", None)
    paths = app_paths()
    settings = replace_setting(
        Settings(), "model.llamacpp.n_threads", 1
    )  # a busy shared CPU: one thread
    settings = replace_setting(settings, "model.ollama.host", "http://127.0.0.1:9")  # no Ollama
    save_settings(replace_setting(settings, "model.llamacpp.n_ctx", 4096), paths.settings_file)

    def fathom(*args: str) -> subprocess.CompletedProcess[str]:
        return run_fathom(*args, env=env, cwd=REPO, program=MODULE)

    listed = fathom("models", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["key"]: r for r in json.loads(listed.stdout)}
    assert rows["starter"]["in_use"] and rows["tiny"]["where"] == "to download"
    assert rows["tiny"]["fit"]["verdict"] == "fits" and not rows["tiny"]["installed"]
    assert server.requests == []  # listing contacted nothing
    assert (
        rows["tiny"]["answer_s"] is None
    )  # this computer's speed is not known (the suite never times it)

    # with this computer's speed kept from an earlier measurement: about how long a deep answer takes
    keep_speed(
        paths.cache_dir, Speed(300.0, 100.0, model_bytes=size, threads=1, machine=machine_key(1))
    )
    table = fathom("models", "list")
    assert table.returncode == 0 and "DEEP ANSWER" in table.stdout, table.stderr
    assert "about 15 s" in next(
        line for line in table.stdout.splitlines() if "Tiny research model" in line
    )
    alone = fathom("models")  # a newcomer's first try: the same list
    assert alone.returncode == 0 and alone.stdout == table.stdout, alone.stderr

    # a download whose bytes do not match the catalog's sha256 is refused and leaves nothing
    corrupt = fathom("models", "download", "corrupt")
    assert (
        corrupt.returncode == 1 and "SHA-256" in corrupt.stderr and "deleted" in corrupt.stderr
    ), corrupt.stderr
    assert not list(paths.models_dir.glob("corrupt.gguf*"))

    downloaded = fathom("models", "download", "tiny")
    assert downloaded.returncode == 0, downloaded.stderr
    target = paths.models_dir / "tiny-research.gguf"
    assert "Verified (sha256)" in downloaded.stdout and target.stat().st_size == size
    assert not list(paths.models_dir.glob("*.part"))
    assert "fathom models use tiny" in downloaded.stdout

    # listed as Fathom's own now, read from its header; chosen by its catalog id
    rows = {r["key"]: r for r in json.loads(fathom("models", "list", "--json").stdout)}
    assert (
        rows["tiny"]["where"] == "Fathom"
        and rows["tiny"]["installed"]
        and rows["tiny"]["path"] == str(target)
    )
    assert rows["tiny"]["quantization"] == "Q4_1"
    used = fathom("models", "use", "tiny")
    assert used.returncode == 0 and "Research now uses" in used.stdout, used.stderr
    saved, problem = load_settings(paths.settings_file)
    assert (
        problem is None
        and saved.model.backend == "llamacpp"
        and saved.model.llamacpp.model_path == str(target)
    )

    doctor = json.loads(fathom("doctor", "--json").stdout)
    assert doctor["research_model"]["key"] == "tiny" and doctor["research_model"]["fit"] == "fits"

    # the downloaded model answers a research run, and History keeps which model it was
    note = tmp_path / "docs" / "harbour.md"
    note.parent.mkdir()
    note.write_text(NOTE, encoding="utf-8")
    ingested = fathom("ingest", str(note), "--collection", "harbour", "--quiet")
    assert ingested.returncode == 0, ingested.stderr
    asked = fathom("ask", "Where are the tide tables of Port Essel kept?", "--mode", "quick",
                   "--collection", "harbour", "--max-seconds", "300")  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert "Using the starter model" not in asked.stderr
    history = json.loads(fathom("history", "--json").stdout)
    assert history[0]["model"] == "tiny-research"

    removed = fathom("models", "remove", "tiny")
    assert removed.returncode == 0 and not target.exists(), removed.stderr
    assert "It was the research model" in removed.stdout
    saved, _ = load_settings(paths.settings_file)
    assert saved.model.backend == "auto" and saved.model.llamacpp.model_path == ""

    # the starter is part of the installation: never removed
    kept = fathom("models", "remove", "starter")
    assert kept.returncode == 1 and "part of the installation" in kept.stderr


def test_a_download_with_no_connection_says_so_plainly(tmp_path: Path, starter_sha256: str) -> None:
    with socket.socket() as sock:  # a port where nothing listens: like a machine with no network
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    entry = {
        "id": "far",
        "name": "Far away",
        "url": f"http://127.0.0.1:{port}/far.gguf",
        "sha256": starter_sha256,
        "size_bytes": 1000,
        "ram_gb": 0.6,
        "context": 8192,
        "license": "Apache-2.0",
        "reasoning": False,
    }
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "FATHOM_MODEL_CATALOG": str(catalog),
        "HOME": str(tmp_path),
    }
    result = run_fathom("models", "download", "far", env=env, cwd=REPO, program=MODULE)
    assert result.returncode == 1
    assert (
        "no connection to 127.0.0.1" in result.stderr and "keep working offline" in result.stderr
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert not list(app_paths().models_dir.glob("far.gguf*"))
