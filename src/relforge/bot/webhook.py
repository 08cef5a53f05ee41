"""`relforge bot serve`: a small webhook receiver.  Every request must carry a valid
`X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the shared secret, compared in constant
time) or it is answered 401 before anything reads its body as JSON.  Accepted events are queued
and handled one at a time by a worker thread, so GitHub gets its answer (202) at once."""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

REQUEST_TIMEOUT = 30.0  # seconds a client has for each read of its request
MAX_BODY = 5 * 1024 * 1024  # GitHub caps payloads at 25 MB; comment events are a few KB

EventHandler = Callable[[str, Mapping[str, Any]], None]


def signature(secret: bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` header value GitHub sends for this body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    if not header or not secret:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())


class WebhookServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        secret: bytes,
        handle: EventHandler,
        log: Callable[[str], None] | None = None,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        super().__init__(address, _Handler)
        self.request_timeout = timeout
        self.secret = secret
        self.handle = handle
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self.events: queue.Queue[tuple[str, Mapping[str, Any]] | None] = queue.Queue()
        self.worker = threading.Thread(target=self._work, name="relforge-bot-worker", daemon=True)
        self.worker.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def _work(self) -> None:
        while True:
            item = self.events.get()
            try:
                if item is None:
                    return
                name, payload = item
                try:
                    self.handle(name, payload)
                except Exception as exc:  # one bad event must not stop the server
                    self.log(f"event {name} failed: {exc}")
            finally:
                self.events.task_done()

    def server_close(self) -> None:
        self.events.put(None)
        self.worker.join(timeout=30)
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    server: WebhookServer

    def setup(self) -> None:
        # A request must arrive whole in time: a client that stops sending (slowloris) would
        # otherwise hold a thread for ever.  The socket timeout bounds every read.
        super().setup()
        self.connection.settimeout(self.server.request_timeout)

    def log_message(self, format: str, *args: Any) -> None:
        self.server.log(f"{self.address_string()} {format % args}")

    def do_GET(self) -> None:
        self._answer(405, {"message": "POST GitHub webhook events here"})

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            return self._answer(411, {"message": "Content-Length required"})
        if length < 0 or length > MAX_BODY:
            return self._answer(413, {"message": "payload too large"})
        body = self.rfile.read(length)
        if not verify(self.server.secret, body, self.headers.get("X-Hub-Signature-256")):
            return self._answer(401, {"message": "bad or missing X-Hub-Signature-256"})
        event = self.headers.get("X-GitHub-Event", "")
        if event == "ping":
            return self._answer(200, {"message": "pong"})
        try:
            payload = _payload(body, self.headers.get("Content-Type", ""))
        except ValueError:
            return self._answer(400, {"message": "the body is not a JSON event payload"})
        self.server.events.put((event, payload))
        return self._answer(202, {"message": f"queued {event or 'event'}"})

    def _answer(self, status: int, data: Mapping[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def _payload(body: bytes, content_type: str) -> Mapping[str, Any]:
    text = body.decode("utf-8")
    if content_type.split(";")[0].strip() == "application/x-www-form-urlencoded":
        text = parse_qs(text).get("payload", [""])[0]
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return data
