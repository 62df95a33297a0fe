"""A privacy guard for tests: records every attempt to reach an address outside the
loopback range (connects and name lookups) while a test runs. Import both names into a
test module to use the ``network_guard`` fixture."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest


class NetworkGuard:
    """Records every attempt to reach an address outside the loopback range."""

    def __init__(self) -> None:
        self.violations: list[str] = []

    def check(self, address: Any) -> None:
        if not isinstance(address, tuple):  # AF_UNIX paths are local
            return
        host = str(address[0])
        if host in ("localhost", ""):
            return
        try:
            ip = ipaddress.ip_address(host.split("%")[0])
        except ValueError:
            self.violations.append(f"connection to host name {host!r}")
            return
        if not ip.is_loopback and not (
            ip.version == 6 and ip.ipv4_mapped and ip.ipv4_mapped.is_loopback
        ):
            self.violations.append(f"connection to {host}:{address[1]}")


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        guard.check(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        guard.check(address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check(address)
        return real_create(address, *args, **kwargs)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            name = host.decode() if isinstance(host, bytes) else str(host)
            if name not in ("localhost", "") and not _is_loopback_literal(name):
                guard.violations.append(f"name lookup of {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield guard


def _is_loopback_literal(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
