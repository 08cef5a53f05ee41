"""A folder's pages commit as one unit: a `publish` killed with SIGKILL between two page
writes (local store and S3 on moto), or whose HTML upload fails with HTTP 500 (a fault-injecting
proxy in front of moto), leaves an incomplete set that the next `index` finishes — never one
that reruns call up to date."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3, free_port
from tests.integration.test_promote_flow import s3_matrix
from tests.pacedcli import KILLED_LEASE, TOOK_OVER, paced_relforge
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
RELFORGE = [sys.executable, "-m", "relforge"]
NEW = "rfdemo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl"


def manifests(tmp_path: Path) -> tuple[Path, Path]:
    """Manifests of version 1.0.0 and of 1.0.1 (test channel)."""
    out = []
    for version in ("1.0.0", "1.0.1"):
        work = tmp_path / f"work-{version}"
        path = work / "relforge-manifest.json"
        write_manifest(path, release_wheels(work, version=version))
        out.append(path)
    return out[0], out[1]


def publish_argv(matrix: Path, manifest: Path) -> list[str]:
    args = ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)]
    return [*RELFORGE, *args, "--execute"]


def kill_after_json_page(argv: list[str], cwd: Path, page_has_new: Callable[[], bool]) -> None:
    """Run `argv` with slow page writes and SIGKILL it right after the project's JSON page
    lists the new wheel (before the marker commits the set; the HTML page may or may not
    have been written: the pages of a set are written in parallel)."""
    paced = [*paced_relforge(page_delay=0.6), *argv[len(RELFORGE) :], *KILLED_LEASE]
    proc = subprocess.Popen(paced, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not page_has_new() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "publish finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def finish_and_check(
    run: Callable[..., Result],
    matrix: Path,
    read: Callable[[str], bytes | None],
    dirs: bool,
    rerun: tuple[str, ...] = (),
    killed: bool = True,
) -> None:
    """The incomplete set is seen as such, finished by `index` (or by rerunning the command
    `rerun`), and then up to date."""

    def generations() -> tuple[str, str]:
        marker = json.loads(read("whl/test/cpu/.relforge-pages.json") or b"{}")
        page = json.loads(read("whl/test/cpu/rfdemo/index.json") or b"{}")
        return marker["projects"]["rfdemo"]["generation"], page["_relforge"]["generation"]

    committed, written = generations()
    assert committed != written  # the page of this run is not part of the committed set
    plan = run("index", str(matrix), "--channel", "test")
    assert plan.code == 0 and "rebuild rfdemo" in plan.out, plan.out + plan.err
    done = run(*(rerun or ("index", str(matrix), "--channel", "test", "--execute")))
    assert done.code == 0, done.out + done.err
    if killed:  # the killed run's lease, taken over once it expired
        assert TOOK_OVER in done.err, done.err
    names = ["index.html", "index.json", *([""] if dirs else [])]
    for name in names:
        page = read(f"whl/test/cpu/rfdemo/{name}")
        assert page is not None and NEW.encode() in page, name
    again = run("index", str(matrix), "--channel", "test", "--execute")
    assert "0 folder(s) written" in again.out, again.out
    committed, written = generations()
    assert committed == written


def test_sigkill_between_page_writes_on_the_local_store(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    first, second = manifests(tmp_path)
    assert subprocess.run(publish_argv(matrix, first), cwd=tmp_path).returncode == 0
    folder = tmp_path / ".relforge" / "store" / "whl" / "test" / "cpu" / "rfdemo"

    def has_new() -> bool:
        try:
            return NEW in (folder / "index.json").read_text()
        except OSError:
            return False

    kill_after_json_page(publish_argv(matrix, second), tmp_path, has_new)

    def read(key: str) -> bytes | None:
        path = tmp_path / ".relforge" / "store" / key
        return path.read_bytes() if path.is_file() else None

    # rerunning the killed publish finishes the set (its objects are all there already)
    finish_and_check(run, matrix, read, dirs=False, rerun=tuple(publish_argv(matrix, second)[3:]))


def test_sigkill_between_page_writes_on_s3(
    tmp_path: Path, s3: S3, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    first, second = manifests(tmp_path)
    assert subprocess.run(publish_argv(matrix, first), cwd=tmp_path).returncode == 0
    client: Any = s3.client()

    def read(key: str) -> bytes | None:
        try:
            body: bytes = client.get_object(Bucket=s3.bucket, Key=f"dl/{key}")["Body"].read()
        except client.exceptions.NoSuchKey:
            return None
        return body

    def has_new() -> bool:
        return NEW.encode() in (read("whl/test/cpu/rfdemo/index.json") or b"")

    kill_after_json_page(publish_argv(matrix, second), tmp_path, has_new)
    finish_and_check(run, matrix, read, dirs=True)


class FaultProxy:
    """An HTTP proxy to moto that answers 500 to every PUT of a key ending in `fail_suffix`
    while `failing` is set (botocore's retries all fail too)."""

    def __init__(self, upstream: str, fail_suffix: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.fail_suffix = fail_suffix
        self.failing = True
        self.failed = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self._body()
                path = self.path.split("?", 1)[0]
                if proxy.failing and self.command == "PUT" and path.endswith(proxy.fail_suffix):
                    proxy.failed += 1
                    error = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    self.send_response(500)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(error)))
                    self.end_headers()
                    self.wfile.write(error)
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = proxy.upstream
                if "chunked" in self.headers.get("Transfer-Encoding", ""):
                    headers.pop("Transfer-Encoding", None)
                    headers["Content-Length"] = str(len(body))
                conn.request(self.command, self.path, body=body or None, headers=headers)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            def _body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", ""):
                    raw = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return raw
                        raw += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length", "0") or 0)
                return self.rfile.read(length) if length else b""

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def html_faults(s3: S3) -> Iterator[FaultProxy]:
    proxy = FaultProxy(s3.endpoint, "/rfdemo/index.html")
    yield proxy
    proxy.close()


def test_a_failed_html_upload_is_finished_by_the_next_index(
    tmp_path: Path,
    s3: S3,
    html_faults: FaultProxy,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    first, second = manifests(tmp_path)
    html_faults.failing = False
    assert subprocess.run(publish_argv(matrix, first), cwd=tmp_path).returncode == 0
    matrix.write_text(matrix.read_text().replace(s3.endpoint, html_faults.url))
    html_faults.failing = True
    failed = subprocess.run(publish_argv(matrix, second), cwd=tmp_path, capture_output=True)
    assert failed.returncode != 0 and html_faults.failed > 0
    assert b"Traceback" not in failed.stderr and b"index.html" in failed.stderr
    client: Any = s3.client()

    def read(key: str) -> bytes | None:
        try:
            body: bytes = client.get_object(Bucket=s3.bucket, Key=f"dl/{key}")["Body"].read()
        except client.exceptions.NoSuchKey:
            return None
        return body

    assert NEW.encode() in (read("whl/test/cpu/rfdemo/index.json") or b"")  # half a set
    html_faults.failing = False
    finish_and_check(run, matrix, read, dirs=True, killed=False)
