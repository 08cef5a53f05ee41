"""Servers the promotion tests start themselves on 127.0.0.1: moto (S3), pypiserver, and a
static file server; plus fresh virtual environments for real pip installs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests import daemons

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    argv: list[str], url: str, log: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a server as a daemon of the test run (tests.daemons: stopped even when the run is
    killed) and wait until `url` answers."""
    with log.open("wb") as out:
        proc: subprocess.Popen[bytes] = daemons.spawn(
            argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            daemons.stop(proc)
            raise RuntimeError(f"{argv[0]} exited: {log.read_text(errors='replace')}")
        try:
            requests.get(url, timeout=1)
            return proc
        except (requests.ConnectionError, requests.Timeout):  # a loaded machine: not up yet
            time.sleep(0.1)
    daemons.stop(proc)
    raise RuntimeError(f"{argv[0]} did not answer on {url}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    daemons.stop(proc)


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc = start_server([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], url, log)
    yield url
    stop_server(proc)


@dataclass(frozen=True)
class S3:
    endpoint: str
    bucket: str

    def client(self) -> Any:  # boto3 is untyped: a botocore S3 client
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint)

    def create_public_bucket(self, bucket: str) -> None:
        """A bucket anyone may read (as a download site's bucket behind its CDN)."""
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint)
        client.create_bucket(Bucket=bucket)
        statement = {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/*",
        }
        policy = {"Version": "2012-10-17", "Statement": [statement]}
        client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))


@pytest.fixture
def s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    """A fresh bucket on the moto server, with (fake) credentials in the environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    bucket = f"rf-{uuid.uuid4().hex[:12]}"

    s3 = S3(moto_endpoint, bucket)
    s3.create_public_bucket(bucket)
    return s3


@dataclass(frozen=True)
class PyPIServer:
    url: str
    username: str
    password: str
    packages: Path

    @property
    def simple(self) -> str:
        return f"{self.url}/simple/"


@pytest.fixture
def pypiserver(tmp_path: Path) -> Iterator[PyPIServer]:
    from passlib.apache import HtpasswdFile

    packages = tmp_path / "pypi-packages"
    packages.mkdir()
    htpasswd = tmp_path / "htpasswd"
    users = HtpasswdFile(str(htpasswd), new=True)
    users.set_password("releng", "s3cret-pass")
    users.save()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [
        str(BIN / "pypi-server"),
        "run",
        "-i",
        "127.0.0.1",
        "-p",
        str(port),
        "-P",
        str(htpasswd),
        "-a",
        "update",
        "--disable-fallback",
        str(packages),
    ]
    proc = start_server(argv, url, tmp_path / "pypiserver.log")
    yield PyPIServer(url, "releng", "s3cret-pass", packages)
    stop_server(proc)


@pytest.fixture
def static_server() -> Iterator[Callable[[Path], str]]:
    """Serve a directory over HTTP (as a CDN in front of a store would); returns its URL."""
    procs: list[subprocess.Popen[bytes]] = []

    def serve(root: Path) -> str:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
        procs.append(start_server(argv, url, root.parent / f"http-{port}.log", cwd=root))
        return url

    yield serve
    for proc in procs:
        stop_server(proc)


def pip_install(tmp_path: Path, index_url: str, requirement: str) -> str:
    """Install `requirement` with real pip from `index_url` only, into a fresh venv; returns
    the installed module's PAYLOAD (which cell's wheel it was)."""
    venv = tmp_path / f"venv-{uuid.uuid4().hex[:8]}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "--isolated",
            "install",
            "--no-cache-dir",
            "--index-url",
            index_url,
            requirement,
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    payload = subprocess.run(
        [str(python), "-c", "import rfdemo; print(rfdemo.PAYLOAD, rfdemo.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return payload.stdout.strip()


TORCH_WHEELS = (Path("/opt/wheels"), Path("/opt/pypi/files"), Path("/opt/pypi-more/files"))


@pytest.fixture(scope="session")
def torch_wheel() -> Path:
    """The CPU torch the torch extension builds against: a local wheel of this machine (no
    registry serves 2.13.0+cpu to it), or the test is skipped saying where it looked."""
    for folder in TORCH_WHEELS:
        found = sorted(folder.glob("torch-2.13.0+cpu-cp311-cp311-*.whl"))
        if found:
            return found[0]
    pytest.skip(
        "no torch-2.13.0+cpu-cp311 wheel in "
        + ", ".join(str(f) for f in TORCH_WHEELS)
        + ": the torch extension builds against that local CPU wheel (the PyPI torch is "
        "the CUDA build, gigabytes)"
    )
