"""A reverse proxy on 127.0.0.1 that injects the transient faults of a real S3 service in front
of moto: 503 SlowDown, 500 InternalError (before the request reaches the service, or after it
landed), 400 RequestTimeout, connections reset (before or after the service answered), bodies
cut mid-stream and object bodies with a byte flipped on the wire.

Which requests fail is drawn from a seeded random generator at a given rate; every injected
fault is counted by kind, so a test can check that each one was noticed (one retry per fault).

    with FaultProxy(upstream="http://127.0.0.1:5000", seed=1, rate=0.1) as proxy:
        ... point the S3 endpoint at proxy.url ...
        proxy.injected  # {"slowdown": 3, "cut": 1, ...}

It also holds S3's single-request ceiling, which moto does not (moto takes a PUT or a CopyObject
of any size): with `max_request`, a PutObject or UploadPart whose body is larger is refused with
400 EntityTooLarge, and a CopyObject or UploadPartCopy whose source (or range) is larger with
400 InvalidRequest, as AWS answers them.  Every request is counted by S3 operation
(`operations`), with the bytes of its body (`sent`); `hold("UploadPart", after=n)` lets the
first n requests of an operation through and holds the rest until `drop_held()` resets them
unanswered (a client killed with its uploads in flight).  `only` limits the faults to some
operations (the parts of multipart transfers, say).
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import sys
import threading
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

# kind → which requests it hits: "any"; "upload" (a request with a body); "body" (a GET, whose
# answer has a body to cut); "object" (a GET of an object)
KINDS: dict[str, str] = {
    "slowdown": "any",  # 503 SlowDown, the request never reached the service
    "internal": "any",  # 500 InternalError, never reached the service
    "internal_after": "any",  # 500 InternalError, but the service did the work
    "request_timeout": "upload",  # 400 RequestTimeout (S3 sends it for a stalled upload)
    "reset": "any",  # connection reset before the request was forwarded
    "reset_after": "any",  # connection reset after the service did the work
    "cut": "body",  # the answer's body stops half-way and the connection resets
    "flip": "object",  # one byte of an object's body changed on the wire
}
_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection", "te"}
_ERRORS = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "internal": (500, "InternalError", "We encountered an internal error. Please try again."),
    "internal_after": (500, "InternalError", "We encountered an internal error."),
    "request_timeout": (400, "RequestTimeout", "Your socket connection to the server was not "
                        "read from or written to within the timeout period."),
}  # fmt: skip


class FaultProxy:
    def __init__(
        self,
        *,
        upstream: str,
        seed: int,
        rate: float,
        kinds: tuple[str, ...] = tuple(KINDS),
        max_request: int | None = None,
        only: tuple[str, ...] = (),
    ) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.rate = rate
        self.kinds = kinds
        self.max_request = max_request
        self.only = only  # operations that may fail (empty: all)
        self.injected: Counter[str] = Counter()
        self.faulted: Counter[str] = Counter()  # injected faults, by the operation they hit
        self.operations: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()  # request body bytes forwarded, by operation
        self.refused: Counter[str] = Counter()  # over max_request, by operation
        self.requests = 0
        self._held_op = ""
        self._held_after = 0
        self._release = threading.Event()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = _Server(self)
        # shutdown() waits for the loop's next poll: 0.5 s by default, on every proxy a test opens
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop_held()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def draw(self) -> tuple[bool, float]:
        """Whether this request fails, and a number that picks how (drawn under a lock so one
        seed gives one sequence of decisions)."""
        with self._lock:
            self.requests += 1
            return self._rng.random() < self.rate, self._rng.random()

    def pick(self, number: float, *, upload: bool, body: bool, obj: bool) -> str | None:
        applies = {"any": True, "upload": upload, "body": body, "object": obj}
        fits = [k for k in self.kinds if applies[KINDS[k]]]
        if not fits:
            return None
        return fits[min(int(number * len(fits)), len(fits) - 1)]

    def count(self, kind: str, operation: str = "") -> None:
        with self._lock:
            self.injected[kind] += 1
            self.faulted[operation] += 1

    def hold(self, operation: str, *, after: int) -> None:
        """Let `after` requests of `operation` through, then hold every further one."""
        with self._lock:
            self._held_op, self._held_after = operation, after
            self._release.clear()

    def drop_held(self) -> None:
        """Reset the held requests without forwarding them, and hold no more."""
        with self._lock:
            self._held_op = ""
        self._release.set()

    def admit(self, operation: str, size: int) -> bool:
        """Count the request; False when it is to be held (and then dropped)."""
        with self._lock:
            self.operations[operation] += 1
            if operation == self._held_op and self.operations[operation] > self._held_after:
                return False
            self.sent[operation] += size
            return True

    def refuse(self, operation: str) -> None:
        with self._lock:
            self.refused[operation] += 1

    def wait_released(self) -> None:
        self._release.wait()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, proxy: FaultProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client gone (killed, or reset by this proxy): nothing to report
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._relay()

    do_PUT = do_POST = do_HEAD = do_DELETE = do_GET

    @property
    def proxy(self) -> FaultProxy:
        return self.server.proxy

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _drain(self, size: int) -> None:
        while size > 0:
            block = self.rfile.read(min(size, 1 << 20))
            if not block:
                return
            size -= len(block)

    def _reset(self) -> None:
        """Drop the connection with a TCP reset, as a load balancer does."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _error(self, kind: str) -> None:
        status, code, message = _ERRORS[kind]
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            "<RequestId>faultproxy</RequestId></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self.proxy.upstream, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            return response.status, response.getheaders(), data
        finally:
            conn.close()

    def _operation(self) -> str:
        """The S3 operation of the request (as far as the tests need to tell them apart)."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, True)
        copy = "x-amz-copy-source" in self.headers
        if self.command == "PUT" and "uploadId" in query:
            return "UploadPartCopy" if copy else "UploadPart"
        if self.command == "PUT":
            return "CopyObject" if copy else "PutObject"
        if self.command == "POST" and "uploads" in query:
            return "CreateMultipartUpload"
        if self.command == "POST" and "uploadId" in query:
            return "CompleteMultipartUpload"
        if self.command == "DELETE" and "uploadId" in query:
            return "AbortMultipartUpload"
        if self.command == "GET" and "uploadId" in query:
            return "ListParts"
        if self.command == "GET" and "uploads" in query:
            return "ListMultipartUploads"
        if self.command == "GET" and "Range" in self.headers:
            return "GetObjectRange"
        return self.command

    def _too_large(self, operation: str, size: int) -> str | None:
        """S3's error for a single request over the ceiling (None when it is within)."""
        limit = self.proxy.max_request
        if limit is None:
            return None
        if operation in ("PutObject", "UploadPart") and size > limit:
            return "EntityTooLarge"
        if operation in ("CopyObject", "UploadPartCopy"):
            span = self.headers.get("x-amz-copy-source-range", "")
            if span.startswith("bytes="):
                first, _, last = span[len("bytes=") :].partition("-")
                copied = int(last) - int(first) + 1
            else:
                copied = self._source_size()
            if copied > limit:
                return "InvalidRequest"
        return None

    def _source_size(self) -> int:
        source = urllib.parse.unquote(self.headers["x-amz-copy-source"].split("?", 1)[0])
        conn = http.client.HTTPConnection(*self.proxy.upstream, timeout=60)
        try:
            conn.request("HEAD", "/" + urllib.parse.quote(source.lstrip("/")))
            response = conn.getresponse()
            response.read()
            return int(response.getheader("Content-Length") or 0)
        finally:
            conn.close()

    def _refuse_large(self, code: str, size: int) -> None:
        limit = self.proxy.max_request
        if code == "EntityTooLarge":
            message = "Your proposed upload exceeds the maximum allowed size"
            extra = f"<ProposedSize>{size}</ProposedSize><MaxSizeAllowed>{limit}</MaxSizeAllowed>"
        else:
            message = (
                "The specified copy source is larger than the maximum allowable size for a "
                f"copy source: {limit}"
            )
            extra = ""
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>{extra}"
            "<RequestId>faultproxy</RequestId></Error>"
        ).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _relay(self) -> None:
        operation = self._operation()
        length = self.headers.get("Content-Length")
        declared = int(self.headers.get("x-amz-decoded-content-length") or length or 0)
        refusal = self._too_large(operation, declared)
        if refusal == "EntityTooLarge" and length is not None:
            self._drain(int(length))  # S3 reads what it refuses; nothing of it is kept here
            body = b""
        else:
            body = self._read_body()
            declared = declared or len(body)
            refusal = refusal or self._too_large(operation, declared)
        if refusal is not None:
            self.proxy.refuse(operation)
            self._refuse_large(refusal, declared)
            return
        if not self.proxy.admit(operation, len(body)):
            self.proxy.wait_released()
            self._reset()
            return
        fails, number = self.proxy.draw()
        fails = fails and (not self.proxy.only or operation in self.proxy.only)
        split = urllib.parse.urlsplit(self.path)
        is_get = self.command == "GET"
        is_object = is_get and split.path.count("/") >= 2 and not split.query
        kind = None
        if fails:
            kind = self.proxy.pick(number, upload=bool(body), body=is_get, obj=is_object)
        if kind in ("slowdown", "internal", "request_timeout", "reset"):
            self.proxy.count(kind, operation)
            self._reset() if kind == "reset" else self._error(kind)
            return
        status, headers, data = self._forward(body)
        if (kind == "cut" and len(data) < 2) or (kind == "flip" and (status != 200 or not data)):
            kind = "reset_after"  # nothing to cut or flip in this answer
        if kind in ("internal_after", "reset_after"):
            self.proxy.count(kind, operation)
            self._reset() if kind == "reset_after" else self._error(kind)
            return
        if kind == "flip":
            self.proxy.count(kind, operation)
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0x5A]) + data[middle + 1 :]
        self.send_response(status)
        for name, value in headers:
            if name.lower() in _HOP or (name.lower() == "content-length" and not self._head):
                continue
            self.send_header(name, value)
        if not self._head:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self._head:
            return
        if kind == "cut":
            self.proxy.count(kind, operation)
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._reset()
            return
        self.wfile.write(data)

    @property
    def _head(self) -> bool:
        return self.command == "HEAD"
