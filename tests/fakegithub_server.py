"""The HTTP side of the fake GitHub: a threading server on 127.0.0.1 that hands each request to
one function and writes its answer (JSON, with headers).  It polls for shutdown every 50 ms
(http.server's default 0.5 s cost every test that stops it half a second)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str, Any, "str | None"], tuple[int, Any, dict[str, str]]]
POLL_INTERVAL = 0.05


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Answer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer


class _Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        status, data, headers = self.server.answer(
            method, self.path, body, self.headers.get("Authorization")
        )
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)


def serve(answer: Answer) -> tuple[Server, threading.Thread]:
    server = Server(answer)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, daemon=True
    )
    thread.start()
    return server, thread
