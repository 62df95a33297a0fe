"""A loopback HTTP file server for the download tests.

Serves registered files (from disk or from memory) with HEAD, GET,
``Range: bytes=N-`` (206 + Content-Range, 416 past the end) and Content-Length,
and per-path behaviours a test sets: a connection cut mid-body, a server that
ignores Range, an error status, a slow server and a redirect. Every request is
recorded, and the body bytes actually sent per path are counted.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

CHUNK_BYTES = 64 * 1024


@dataclass
class ServedFile:
    """One path and how the server behaves for it (tests may change fields between calls)."""

    source: Path | bytes | None = None
    cut_after: int | None = (
        None  # send headers for the whole body, then only this many bytes, then close
    )
    cuts: int = 1  # how many GETs are cut (the first ones)
    ignore_range: bool = False  # answer every GET with 200 and the whole file
    status: int = 200  # anything but 200: that status with a short text body
    delay_per_chunk_s: float = 0.0  # pause after each 64 KiB chunk
    redirect_to: str | None = None  # 302 to this path
    gets: int = 0  # GETs answered so far

    @property
    def size(self) -> int:
        if isinstance(self.source, bytes):
            return len(self.source)
        return self.source.stat().st_size if self.source is not None else 0

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """Bytes ``start``..``end`` in 64 KiB chunks."""
        if isinstance(self.source, bytes):
            for position in range(start, end, CHUNK_BYTES):
                yield self.source[position : min(end, position + CHUNK_BYTES)]
            return
        assert self.source is not None
        with self.source.open("rb") as fh:
            fh.seek(start)
            position = start
            while position < end and (chunk := fh.read(min(CHUNK_BYTES, end - position))):
                position += len(chunk)
                yield chunk


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    range: str | None


class FileServer:
    """``with FileServer() as server: server.add("/a.bin", data); server.url("/a.bin")``."""

    def __init__(self) -> None:
        self.files: dict[str, ServedFile] = {}
        self.requests: list[SeenRequest] = []
        self.bytes_sent: dict[str, int] = {}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), name="file-server", daemon=True
        )

    def add(self, path: str, source: Path | bytes | None = None, **behaviour: Any) -> ServedFile:
        served = ServedFile(source=source, **behaviour)
        self.files[path] = served
        return served

    def url(self, path: str) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}{path}"

    def seen(self, path: str | None = None, method: str | None = None) -> list[SeenRequest]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (path is None or r.path == path) and (method in (None, r.method))
            ]

    def start(self) -> FileServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> FileServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _handler_for(server: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        def _serve(self, *, head: bool) -> None:
            range_header = self.headers.get("Range")
            with server.lock:
                server.requests.append(SeenRequest(self.command, self.path, range_header))
                served = server.files.get(self.path)
                if served is not None and not head:
                    served.gets += 1
                gets = served.gets if served is not None else 0
            if served is None:
                self._plain(404, "no such file")
                return
            if served.redirect_to is not None:
                self.send_response(302)
                self.send_header("Location", served.redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if served.status != 200:
                self._plain(served.status, f"status {served.status}")
                return
            size = served.size
            start = 0
            match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
            if match and not served.ignore_range:
                start = int(match.group(1))
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(size - start))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if head:
                return
            cut = served.cut_after is not None and gets <= served.cuts
            end = (
                min(size, start + served.cut_after)
                if cut and served.cut_after is not None
                else size
            )
            try:
                self._send_body(served, start, end)
            except OSError:  # the client went away (cancel): nothing to answer
                self.close_connection = True
                return
            if cut:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def _send_body(self, served: ServedFile, start: int, end: int) -> None:
            for chunk in served.chunks(start, end):
                self.wfile.write(chunk)
                with server.lock:
                    server.bytes_sent[self.path] = server.bytes_sent.get(self.path, 0) + len(chunk)
                if served.delay_per_chunk_s:
                    time.sleep(served.delay_per_chunk_s)  # the slow server's pause

        def _plain(self, status: int, text: str) -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler
