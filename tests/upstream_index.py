"""A local upstream index for the `upstream` tests: files served by a plain `http.server`, with
project pages as PEP 691 JSON (or PEP 503 HTML when the client asks only for that), PEP 658
`.metadata` files, PEP 592 yanked files, and byte ranges of the files (RFC 9110 `Range`, which
the tests can turn off).  Tests add versions between runs: the index "gains" a release."""

from __future__ import annotations

import hashlib
import html
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

DATA = Path(__file__).parent / "upstream_data"
JSON_V1 = "application/vnd.pypi.simple.v1+json"


def recorded(name: str) -> bytes:
    """A METADATA file recorded from PyPI (tests/upstream_data/)."""
    return (DATA / name).read_bytes()


@dataclass
class IndexFile:
    filename: str
    body: bytes | None = None  # None: listed, but its bytes are not served (404)
    path: Path | None = None  # or served from this file (ranges read from disk)
    metadata: bytes | None = None  # served as <file>.metadata (PEP 658) when set
    yanked: str | None = None  # None: not yanked; else the reason ("" for none)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body or self.filename.encode()).hexdigest()


@dataclass
class LocalIndex:
    projects: dict[str, list[IndexFile]] = field(default_factory=dict)
    ranges: bool = True  # answer `Range:` with 206 (off: the whole file, 200)
    json_pages: bool = True  # PEP 691 JSON to a client that asks for it (off: HTML only)
    url: str = ""
    served: dict[str, int] = field(default_factory=dict)  # path → bytes sent
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, project: str, *files: IndexFile) -> None:
        with self.lock:
            self.projects.setdefault(str(canonicalize_name(project)), []).extend(files)

    def listing(self, project: str, *filenames: str, yanked: str | None = None) -> None:
        """Files that are only listed (their bytes are never fetched by the tests)."""
        self.add(project, *(IndexFile(f, yanked=yanked) for f in filenames))

    def find(self, filename: str) -> IndexFile | None:
        for files in self.projects.values():
            for f in files:
                if f.filename == filename:
                    return f
        return None

    def page(self, project: str, *, as_json: bool) -> tuple[bytes, str] | None:
        files = self.projects.get(project)
        if files is None:
            return None
        if as_json:
            entries = []
            for f in files:
                entry: dict[str, Any] = {
                    "filename": f.filename,
                    "url": f"../../files/{f.filename}",
                    "hashes": {"sha256": f.sha256},
                }
                if f.yanked is not None:
                    entry["yanked"] = f.yanked or True
                if f.metadata is not None:
                    entry["core-metadata"] = {"sha256": hashlib.sha256(f.metadata).hexdigest()}
                entries.append(entry)
            data = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
            return json.dumps(data).encode(), JSON_V1
        rows = []
        for f in files:
            attrs = ""
            if f.yanked is not None:
                attrs += f' data-yanked="{html.escape(f.yanked)}"'
            if f.metadata is not None:
                digest = hashlib.sha256(f.metadata).hexdigest()
                attrs += f' data-core-metadata="sha256={digest}"'
            href = f"../../files/{f.filename}#sha256={f.sha256}"
            rows.append(f'<a href="{html.escape(href)}"{attrs}>{html.escape(f.filename)}</a><br>')
        text = "<!DOCTYPE html><html><body>\n" + "\n".join(rows) + "\n</body></html>\n"
        return text.encode(), "text/html"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        index = self.server.index
        path = self.path.split("?", 1)[0]
        if path.startswith("/simple/"):
            name = path.removeprefix("/simple/").strip("/")
            asked = JSON_V1 in self.headers.get("Accept", "")
            found = index.page(name, as_json=asked and index.json_pages)
            if found is None:
                self._send(404, b"not found", "text/plain")
            else:
                self._send(200, *found)
            return
        filename = path.removeprefix("/files/")
        if filename.endswith(".metadata"):
            meta = index.find(filename.removesuffix(".metadata"))
            if meta is None or meta.metadata is None:
                self._send(404, b"not found", "text/plain")
            else:
                self._send(200, meta.metadata, "text/plain")
            return
        file = index.find(filename)
        if file is None or (file.body is None and file.path is None):
            self._send(404, b"not found", "text/plain")
            return
        self._file(file)

    def _file(self, file: IndexFile) -> None:
        wanted = self.headers.get("Range", "")
        size = len(file.body) if file.body is not None else file.path.stat().st_size  # type: ignore[union-attr]  # one of them is set
        if not (self.server.index.ranges and wanted.startswith("bytes=")):
            self._send(200, _read(file, 0, size), "application/octet-stream")
            return
        first, _, last = wanted.removeprefix("bytes=").partition("-")
        start = max(0, size - int(last)) if not first else int(first)
        stop = size - 1 if not first or not last else min(int(last), size - 1)
        part = _read(file, start, stop + 1)
        self._send(
            206, part, "application/octet-stream", {"Content-Range": f"bytes {start}-{stop}/{size}"}
        )

    def _send(
        self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None
    ) -> None:
        with self.server.index.lock:
            self.server.index.served[self.path] = self.server.index.served.get(self.path, 0) + len(
                body
            )
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


def _read(file: IndexFile, start: int, stop: int) -> bytes:
    if file.body is not None:
        return file.body[start:stop]
    assert file.path is not None
    with file.path.open("rb") as fh:
        fh.seek(start)
        return fh.read(stop - start)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, index: LocalIndex) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.index = index


@contextmanager
def serve_index(index: LocalIndex) -> Iterator[LocalIndex]:
    server = _Server(index)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def wheel_bytes(filename: str, metadata: bytes, *, padding: int = 0) -> bytes:
    """A small real wheel holding `metadata` as its METADATA (and `padding` stored bytes before
    it, so reading it by ranges must not fetch the whole file)."""
    dist, version = filename.split("-")[:2]
    info = f"{dist}-{version}.dist-info"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        if padding:
            zf.writestr(
                f"{dist}/_padding.bin", bytes(range(256)) * (padding // 256), zipfile.ZIP_STORED
            )
        zf.writestr(f"{info}/METADATA", metadata, zipfile.ZIP_DEFLATED)
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return out.getvalue()


def synthetic_metadata(name: str, version: str) -> bytes:
    """The METADATA of a dependency whose Requires-Dist the tests do not look at."""
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()


def torch_release(
    index: LocalIndex,
    version: str,
    pythons: tuple[str, ...] = ("310", "311", "312", "313", "314"),
    *,
    metadata: bool = True,
    body: bytes | None = None,
) -> IndexFile:
    """torch `version` on the index: Linux x86_64 and aarch64 wheels for `pythons`; the cp312
    x86_64 one carries the real METADATA recorded from PyPI (as a PEP 658 file when `metadata`,
    and as the bytes of a real zip when `body` is given).  Returns that file."""
    main = f"torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"
    real = recorded(f"{main}.metadata")
    files = []
    for py in pythons:
        for arch in ("x86_64", "aarch64"):
            name = f"torch-{version}-cp{py}-cp{py}-manylinux_2_28_{arch}.whl"
            if name != main:
                files.append(IndexFile(name))
    chosen = IndexFile(main, body=body, metadata=real if metadata else None)
    index.add("torch", chosen, *files)
    return chosen


def numpy_release(
    index: LocalIndex, version: str, pythons: tuple[str, ...], *, yanked: str | None = None
) -> None:
    files = [
        IndexFile(
            f"numpy-{version}-cp{py}-cp{py}-manylinux_2_28_x86_64.whl",
            metadata=synthetic_metadata("numpy", version),
            yanked=yanked,
        )
        for py in pythons
    ]
    index.add("numpy", IndexFile(f"numpy-{version}.tar.gz", yanked=yanked), *files)
