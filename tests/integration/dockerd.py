"""A private Docker engine for tests: its own socket, data and exec roots in the temporary
directory, no bridge and no iptables (as DEVELOPERS.md describes), stopped and cleaned up
afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relforge.cachedir import locked


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
    log = (root / "dockerd.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(sock, proc, root / "dockerd.log")
        yield f"unix://{sock}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)


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


def _unmount_below(root: Path) -> None:
    """dockerd leaves <exec-root>/netns/default (and, if killed, overlay mounts) mounted."""
    prefix = str(root) + "/"
    with open("/proc/mounts", encoding="utf-8") as fh:
        points = [line.split()[1] for line in fh if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
