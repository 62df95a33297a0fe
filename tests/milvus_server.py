"""A real Milvus server for tests: PyPI ``milvus`` 2.3.5, the embedded Milvus standalone
(one binary with its own etcd and local storage), started in a temp dir on 127.0.0.1.

Every port it uses is a free one the OS picked, so two runs on one machine do not meet,
and every address its parts give one another is 127.0.0.1 (by default each would give
the machine's first network address), so all of its traffic stays on the loopback. Its
gRPC servers still bind every interface: Milvus 2.3 has no setting for that.
"""

from __future__ import annotations

import errno
import os
import platform
import re
import shutil
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

VERSION = "2.3.5"
INSTALL = f".venv/bin/pip install --no-deps milvus=={VERSION}"
# the parts of a Milvus standalone; each tells the others its address
PARTS = (
    "rootCoord",
    "proxy",
    "queryCoord",
    "queryNode",
    "indexCoord",
    "indexNode",
    "dataCoord",
    "dataNode",
)


class ServerUnavailable(Exception):
    """The server cannot run here (the package is missing, or its binary cannot start
    on this platform); the message says why."""


class ServerFailed(Exception):
    """The server could start here but did not; the message holds its log's tail."""


@contextmanager
def milvus_server(base: Path, start_timeout_s: float = 90.0) -> Iterator[str]:
    """Start the server with its files under ``base``; yield its URI (``http://127.0.0.1:PORT``);
    stop it on leaving."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        raise ServerUnavailable(
            f"the milvus {VERSION} wheel installed here is the manylinux x86_64 one; "
            f"this is {sys.platform} on {platform.machine()}"
        )
    try:
        import milvus
    except ImportError:
        raise ServerUnavailable(
            f"the `milvus` package (an embedded Milvus server) is not installed: {INSTALL}"
        ) from None
    if milvus.__version__ != VERSION:
        raise ServerUnavailable(
            f"these tests are written for milvus {VERSION}, not {milvus.__version__}: {INSTALL}"
        )

    config = milvus.MilvusServerConfig(data_dir=str(base))
    port_keys = [key for key in config.configurable_items if key.endswith("_port")]
    ports = _free_ports(len(port_keys) + 2)
    config.update(**{key: ports.pop() for key in port_keys})  # taken as they are, not searched from
    config.set("etcd_log_level", "warn")
    for part in PARTS:
        config.set(f"{part}.ip", "127.0.0.1")
    _embedded_etcd_config(
        config, base / "etcd.yaml", client_port=config.configs["etcd_port"], peer_port=ports.pop()
    )
    server = milvus.MilvusServer(config, wait_for_started=False)
    server.webservice_port = ports.pop()  # the health and metrics port
    cwd = os.getcwd()
    try:
        server.start()  # unpacks the binaries into base/bin, then runs them
    except OSError as exc:
        os.chdir(cwd)  # start() left it in base when the binary would not run
        if exc.errno in (errno.ENOEXEC, errno.EACCES):
            raise ServerUnavailable(f"the Milvus {VERSION} binary cannot run here: {exc}") from exc
        raise
    with ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, base / "bin", ignore_errors=True)  # its 250 MB of binaries
        cleanup.callback(server.stop)
        _wait_healthy(server, base, start_timeout_s)
        yield f"http://127.0.0.1:{server.listen_port}"


def _embedded_etcd_config(config: Any, path: Path, *, client_port: int, peer_port: int) -> None:
    """Milvus starts its embedded etcd on localhost:2379 and :2380 unless given an etcd
    config file (``etcd.config.path``, which the package's template lacks: it is added)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    path.write_text(
        f"name: default\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\n"
        f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: default={peer}\n",
        encoding="utf-8",
    )
    config.template_text = config.template_text.replace(
        "\netcd:\n", f"\netcd:\n  config:\n    path: {path}\n", 1
    )


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _wait_healthy(server: Any, base: Path, timeout_s: float) -> None:
    url = f"http://127.0.0.1:{server.webservice_port}/healthz"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = server.server_proc.poll()
        if code is not None:
            tail = _log_tail(base)
            if code == -signal.SIGILL:
                raise ServerUnavailable(
                    f"the Milvus {VERSION} binary uses CPU instructions this machine lacks "
                    f"(it died with SIGILL at start; log tail {tail[-200:]!r})"
                )
            if "error while loading shared libraries" in tail or re.search(
                r"GLIBC\S* not found", tail
            ):
                raise ServerUnavailable(
                    f"the Milvus {VERSION} binary needs libraries this system lacks: {tail[-300:]}"
                )
            raise ServerFailed(f"Milvus {VERSION} exited with code {code} at start: {tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if b"OK" in response.read():
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)  # a starting server sends no signal: poll it, with a deadline
    raise ServerFailed(
        f"Milvus {VERSION} did not answer {url} within {timeout_s:.0f} s: {_log_tail(base)}"
    )


def _log_tail(base: Path) -> str:
    logs = [base / "logs" / "milvus-stderr.log", base / "logs" / "milvus-stdout.log"]
    text = "\n".join(log.read_text(errors="replace")[-1500:] for log in logs if log.exists())
    return text.strip()[-1500:] or "(no log)"
