"""A private Docker engine for tests: its own socket, data and exec roots in the temporary
directory, no bridge and no iptables (as DEVELOPERS.md describes), stopped and cleaned up
afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relforge.cachedir import locked
from tests import daemons


@contextlib.contextmanager
def running_dockerd(prefix: str = "relforge-dockerd-", *, exclusive: bool = True) -> Iterator[str]:
    """Start dockerd; yields its DOCKER_HOST (unix://…/docker.sock).  `exclusive`: wait until no
    other test file's engine runs (see LOCK); a file whose engine mostly waits on jobs of its
    own (the act scenarios) passes False and runs beside them."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        pytest.fail("dockerd is not installed: apt-get install -y docker.io (.ci/run does this)")
    if not exclusive:
        yield from _running_dockerd(dockerd, prefix)
        return
    with _one_engine_at_a_time():
        yield from _running_dockerd(dockerd, prefix)


@contextlib.contextmanager
def given_or_private_dockerd(prefix: str) -> Iterator[str]:
    """For benchmarks: the engine of DOCKER_HOST when it is set, else a private one."""
    given = os.environ.get("DOCKER_HOST")
    if given:
        yield given
        return
    with running_dockerd(prefix=prefix) as host:
        yield host


# `make test` runs test files in parallel (pytest-xdist): the Docker test files take turns, so
# one image build at a time fills the rootfs cache and the cores.
LOCK = Path(__file__).resolve().parents[2] / ".relforge" / "test-dockerd.lock"


@contextlib.contextmanager
def _one_engine_at_a_time() -> Iterator[None]:
    LOCK.parent.mkdir(exist_ok=True)
    with locked(LOCK):
        yield


def _engine_parent() -> str:
    """The temporary directory (`make test` puts it in memory: the image build copies a
    gigabyte several times), unless its path leaves too little of the 108 bytes a unix socket
    path may take."""
    parent = tempfile.gettempdir()
    return parent if len(parent) <= 48 else "/tmp"


def _running_dockerd(dockerd: str, prefix: str) -> Iterator[str]:
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=_engine_parent()))
    sock = root / "docker.sock"
    argv = [
        dockerd,
        "--storage-driver=overlay2",
        "--iptables=false",
        "--ip6tables=false",
        "--bridge=none",
        "--host",
        f"unix://{sock}",
        "--data-root",
        str(root / "data"),
        "--exec-root",
        str(root / "exec"),
        "--pidfile",
        str(root / "docker.pid"),
    ]
    with (root / "dockerd.log").open("wb") as log:
        # a daemon of the test run (tests.daemons): stopped, its mounts and folder removed, even
        # when the run is killed
        proc = daemons.spawn(argv, cleanup=root, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(sock, proc, root / "dockerd.log")
        yield f"unix://{sock}"
    finally:
        daemons.stop(proc, grace=30)  # SIGTERM first: dockerd stops its containers


def _wait_until_up(sock: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    import docker

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"dockerd exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        if sock.exists():
            try:
                docker.DockerClient(base_url=f"unix://{sock}").ping()
                return
            except Exception:  # not answering yet
                pass
        time.sleep(0.2)
    pytest.fail(f"dockerd did not answer within 60 s:\n{log.read_text()[-2000:]}")
