"""Network and HTTP faults on every command that talks to an S3 store or a package index: a
closed port, a host that does not resolve, a server that is not S3 (or not an index) answering
HTTP errors, and one that redirects without end.  Each exits 6 with one paragraph naming the
store or URL and a hint; never exit 1 ("a bug"), never a traceback."""

from __future__ import annotations

import http.server
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import PyPIServer, free_port
from tests.integration.test_pypi_upload_errors import staged, upload
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
Run = Callable[..., Result]
BUCKET = "rf-net"
__all__ = ["staged"]  # a fixture, used by name


@contextmanager
def answering(status: int) -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 that answers every request with `status` and an HTML
    page (a 3xx points back at the same URL); yields its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            body = b"<html><body>a web server, not S3 nor an index</body></html>"
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", f"http://{self.headers['Host']}{self.path}")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _one_paragraph(result: Result, *needles: str) -> str:
    assert result.code == 6, result.out + result.err
    err = result.err.strip()
    assert err.startswith("environment fault: "), err
    lines = err.splitlines()
    assert len(lines) == 2 and lines[1].startswith("  hint: "), err
    assert "Traceback" not in result.err and "internal error" not in result.err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


ENDPOINTS = {
    # name → (HTTP status the server answers, or 0 for none, or -1 for a host that does not
    # resolve; words the error must hold)
    "closed-port": (0, "cannot reach"),
    "dns": (-1, "cannot resolve the host"),
    "not-s3-400": (400, "answered HTTP 400 without an S3 error code"),
    "not-s3-404": (404, "answered HTTP 404 without an S3 error code"),
    "not-s3-405": (405, "answered HTTP 405 without an S3 error code"),
    "redirect-loop": (301, "redirect"),
    "not-s3-200": (200, "does not answer as an S3 service does"),
}
COMMANDS: dict[str, Callable[[Path, Path], tuple[str, ...]]] = {
    "publish": lambda m, man: ("publish", str(m), "--channel", "test", "--manifest", str(man)),
    "publish-execute": lambda m, man: (
        "publish", str(m), "--channel", "test", "--manifest", str(man), "--execute"
    ),
    "promote": lambda m, man: ("promote", str(m), "--version", "1.0.0", "--execute"),
    "verify": lambda m, man: ("verify", str(m), "--channel", "test"),
    "index": lambda m, man: ("index", str(m), "--channel", "test", "--execute"),
}  # fmt: skip


@contextmanager
def _endpoint(kind: str) -> Iterator[str]:
    status = ENDPOINTS[kind][0]
    if status == 0:
        yield f"http://127.0.0.1:{free_port()}"
    elif status < 0:
        yield "http://relforge-no-such-host.invalid:9000"
    else:
        with answering(status) as url:
            yield url


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One release's wheels and manifest for every case (building them takes seconds)."""
    work = tmp_path_factory.mktemp("release")
    path = work / "relforge-manifest.json"
    write_manifest(path, release_wheels(work))
    return path


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", sorted(ENDPOINTS))
def test_an_s3_endpoint_that_fails_is_an_environment_fault(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run: Run,
    manifest: Path,
    kind: str,
    command: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with _endpoint(kind) as endpoint:
        matrix = tmp_path / "s3.yaml"
        # two tries: a retry, then the fault (the default 8 tries: test_environment_faults)
        publishing = textwrap.dedent(f"""\
            publishing:
              store: s3://{BUCKET}/dl
              s3_endpoint_url: {endpoint}
              s3_attempts: 2
            """)
        matrix.write_text(matrix_text(publishing), encoding="utf-8")
        failed = run(*COMMANDS[command](matrix, manifest))
    host = endpoint.removeprefix("http://")
    tries = ("after 2 attempts",) if kind in ("closed-port", "dns") else ()
    _one_paragraph(failed, ENDPOINTS[kind][1], host, f"s3://{BUCKET}/dl", *tries)
    assert not list((tmp_path / ".relforge").glob("journal/*"))


@pytest.mark.parametrize("status", [405])
def test_an_index_url_that_is_not_an_index_is_an_environment_fault(
    staged: str, pypiserver: PyPIServer, run: Run, status: int
) -> None:
    with answering(status) as url:
        failed = upload(run, pypiserver.url, "--index-url", f"{url}/simple/", "--execute")
    err = _one_paragraph(failed, f"{url}/simple/", f"HTTP {status}", "--index-url")
    assert "PEP 503" in err
    assert list(pypiserver.packages.iterdir()) == []


@pytest.mark.parametrize(
    ("status", "needle"), [(413, "413 Client Error"), (301, "redirect")], ids=str
)
def test_an_upload_the_repository_refuses_is_an_environment_fault(
    staged: str,
    pypiserver: PyPIServer,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    needle: str,
) -> None:
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    with answering(status) as url:
        failed = upload(run, f"{url}/legacy/", "--index-url", pypiserver.simple, "--execute")
    _one_paragraph(failed, "--repository-url", f"{url.removeprefix('http://')}", needle)
    assert pypiserver.password not in failed.out + failed.err
    assert list(pypiserver.packages.iterdir()) == []


@pytest.mark.parametrize("kind", ["closed-port", "dns"])
def test_validate_from_an_index_that_cannot_be_reached_is_an_environment_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run, kind: str
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    with _endpoint(kind) as endpoint:
        args = ("validate", str(matrix), "-r", "1.0", "-c", "test", "--index", endpoint + "/simple")
        failed = run(*args)
    _one_paragraph(failed, "--index", f"cannot read {endpoint}/simple/", "check the index URL")
