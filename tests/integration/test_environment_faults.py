"""Environment faults through the real CLI: a read-only store (a read-only tmpfs), a full disk
(a tiny tmpfs), a working directory that cannot be written, an S3 endpoint on a closed port, a
host name that does not resolve, and credentials the service refuses.  Each exits 6 with one
paragraph naming the store, key or path and a hint, never a traceback or "internal error",
leaves nothing partial visible, and a rerun after the fault is fixed finishes the work."""

from __future__ import annotations

import hashlib
import os
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import BIN, S3, free_port, start_server, stop_server
from tests.integration.test_promote_flow import objects
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
Run = Callable[..., Result]


def _one_paragraph(result: Result, *needles: str) -> None:
    assert result.code == 6, result.out + result.err
    err = result.err.strip()
    assert err.startswith("environment fault: "), err
    lines = err.splitlines()
    assert len(lines) == 2 and lines[1].startswith("  hint: "), err
    assert "Traceback" not in result.err and "internal error" not in result.err
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """Mount a fresh tmpfs of the given size (we are root: chmod would not stop a write)."""
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
            check=True,
        )
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def _remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(path, release_wheels(tmp_path / "work"))
    return path


def _local_matrix(tmp_path: Path, store: Path, name: str = "matrix.yaml") -> Path:
    path = tmp_path / name
    path.write_text(matrix_text(f"publishing:\n  store: file://{store}\n"), encoding="utf-8")
    return path


def _publish(run: Run, matrix: Path, manifest: Path, *extra: str) -> Result:
    args = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    return run(*args, "--execute", *extra)


def _files(root: Path) -> dict[str, str]:
    """relative path → sha256 of every file under `root` except the hash records (an
    index.json page carries a fingerprint of the local files' inodes and times, and every page
    and the page-set marker the generation id of its run: their keys only)."""
    pages = {"index.json", "index.html", ".relforge-pages.json", ".relforge-root-pages.json"}
    return {
        p.relative_to(root).as_posix(): (
            "" if p.name in pages else hashlib.sha256(p.read_bytes()).hexdigest()
        )
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".relforge-meta" not in p.parts
    }


def test_a_read_only_store(
    tmp_path: Path, manifest: Path, run: Run, tmpfs: Callable[[str, str], Path]
) -> None:
    disk = tmpfs("ro", "4m")
    _remount(disk, "ro")
    matrix = _local_matrix(tmp_path, disk / "store")
    refused = _publish(run, matrix, manifest)
    _one_paragraph(refused, f"file://{disk}/store", "Read-only file system", "remount")
    assert list(disk.iterdir()) == []  # nothing partial
    _remount(disk, "rw")
    assert _publish(run, matrix, manifest).code == 0


def test_an_immutable_store_directory(tmp_path: Path, manifest: Path, run: Run) -> None:
    """`chattr +i`: even root gets EPERM writing into it."""
    store = tmp_path / "store"
    store.mkdir()
    matrix = _local_matrix(tmp_path, store)
    subprocess.run(["chattr", "+i", str(store)], check=True)
    try:
        refused = _publish(run, matrix, manifest)
        _one_paragraph(refused, f"file://{store}", "Operation not permitted", "immutable")
        assert list(store.iterdir()) == []
    finally:
        subprocess.run(["chattr", "-i", str(store)], check=True)
    assert _publish(run, matrix, manifest).code == 0


@pytest.mark.parametrize("damage", ["file-for-folder", "folder-for-file"])
def test_a_damaged_store_is_an_environment_fault_and_a_rerun_finishes(
    tmp_path: Path, manifest: Path, run: Run, damage: str
) -> None:
    """A file where the release channel needs a folder (or a folder where a wheel belongs):
    promote stops with one paragraph naming it (it ended in `internal error: FileExistsError`,
    exit 1), leaves it alone, and finishes once it is moved aside."""
    store = tmp_path / "store"
    matrix = _local_matrix(tmp_path, store)
    assert _publish(run, matrix, manifest).code == 0
    wheel = "rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"
    blocker = store / "whl" / "cpu"
    if damage == "file-for-folder":
        blocker.write_bytes(b"not a folder")
        said = f"{blocker} is a file where the store needs a folder"
    else:
        blocker = blocker / wheel
        blocker.mkdir(parents=True)
        said = f"{blocker} is a folder where the store needs a file"
    promote = ("promote", str(matrix), "--version", "1.0.0", "--execute")
    refused = run(*promote)
    _one_paragraph(refused, "the store is damaged", said, f"move {blocker} out of the store")
    assert blocker.exists() and (blocker.is_file() == (damage == "file-for-folder"))
    (blocker.rename(tmp_path / "moved-aside"))
    done = run(*promote)
    assert done.code == 0, done.out + done.err
    assert (store / "whl" / "cpu" / wheel).is_file()


def test_a_full_disk_leaves_only_whole_objects_and_a_rerun_finishes(
    tmp_path: Path, manifest: Path, run: Run, tmpfs: Callable[[str, str], Path]
) -> None:
    clean_store = tmp_path / "clean-store"
    assert _publish(run, _local_matrix(tmp_path, clean_store, "clean.yaml"), manifest).code == 0
    expected = _files(clean_store)
    disk = tmpfs("full", "1m")
    filler = disk / "filler"
    filler.write_bytes(b"\0" * (1024 * 1024 - 3 * 4096))  # three pages left
    matrix = _local_matrix(tmp_path, disk / "store")
    full = _publish(run, matrix, manifest)
    _one_paragraph(full, f"file://{disk}/store", "No space left on device", "free space")
    left = _files(disk / "store")
    assert left, "the disk should have taken a few objects before filling up"
    assert not [k for k in left if ".relforge-tmp-" in k]  # no temporary file left behind
    for key, digest in left.items():
        assert expected[key] == digest, key  # every object there is whole
    filler.unlink()
    done = _publish(run, matrix, manifest)
    assert done.code == 0, done.out + done.err
    assert _files(disk / "store") == expected


def test_an_unwritable_working_directory_is_an_environment_fault(
    tmp_path: Path,
    manifest: Path,
    run: Run,
    tmpfs: Callable[[str, str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The journal (`.relforge/journal` in the working directory) cannot be written: the CLI's
    safety net reports the OSError that escaped the stage as an environment fault."""
    matrix = _local_matrix(tmp_path, tmp_path / "store")
    cwd = tmpfs("cwd", "1m")
    _remount(cwd, "ro")
    monkeypatch.chdir(cwd)
    refused = _publish(run, matrix, manifest)
    _one_paragraph(refused, f"{cwd}/.relforge", "Read-only file system")
    # nothing was written before the journal (the channel's lease, taken and released before
    # it, leaves at most its empty folder)
    assert not [p for p in (tmp_path / "store").rglob("*") if p.is_file()]


def _s3_matrix(tmp_path: Path, bucket: str, endpoint: str, extra: str = "") -> Path:
    publishing = textwrap.dedent(f"""\
        publishing:
          store: s3://{bucket}/dl
          s3_endpoint_url: {endpoint}
        """)
    publishing += extra
    path = tmp_path / "s3.yaml"
    path.write_text(matrix_text(publishing), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("endpoint", "needle"),
    [
        (f"http://127.0.0.1:{free_port()}", "cannot reach http://127.0.0.1:"),
        ("http://relforge-no-such-host.invalid:9000", "cannot resolve the host"),
    ],
    ids=["closed-port", "dns"],
)
def test_an_endpoint_that_cannot_be_reached(
    tmp_path: Path, manifest: Path, run: Run, s3: S3, endpoint: str, needle: str
) -> None:
    # publishing.s3_attempts: two tries each (the default 8: the failing service below)
    matrix = _s3_matrix(tmp_path, s3.bucket, endpoint, "  s3_attempts: 2\n")
    for extra in ((), ("--execute",)):
        failed = run(
            "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), *extra
        )
        _one_paragraph(
            failed,
            needle,
            "publishing.s3_endpoint_url",
            f"s3://{s3.bucket}/dl",
            "after 2 attempts",
        )
    assert not (tmp_path / ".relforge" / "journal").exists() or not list(
        (tmp_path / ".relforge" / "journal").iterdir()
    )


@pytest.fixture
def strict_moto(tmp_path: Path) -> Iterator[str]:
    """A moto server that checks credentials (IAM auth on from the first request)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    argv = [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]
    old = os.environ.copy()
    os.environ.update(env)
    try:
        proc = start_server(argv, url, tmp_path / "strict-moto.log")
    finally:
        os.environ.clear()
        os.environ.update(old)
    yield url
    stop_server(proc)


def test_refused_credentials(
    tmp_path: Path, manifest: Path, run: Run, strict_moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREFUSEDREFUSED00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret-value")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    matrix = _s3_matrix(tmp_path, "rf-strict", strict_moto)
    refused = _publish(run, matrix, manifest)
    _one_paragraph(refused, "refused the credentials", "s3://rf-strict/dl", "AWS_ACCESS_KEY_ID")
    assert "not-a-real-secret-value" not in refused.out + refused.err


def test_a_failing_service_after_all_retries_is_an_environment_fault(
    tmp_path: Path, manifest: Path, run: Run, s3: S3
) -> None:
    """Every request answered 503 SlowDown: bounded retries, then exit 6, nothing written."""
    from tests.faultproxy import FaultProxy

    with FaultProxy(upstream=s3.endpoint, seed=1, rate=1.0, kinds=("slowdown",)) as proxy:
        matrix = _s3_matrix(tmp_path, s3.bucket, proxy.url)
        failed = _publish(run, matrix, manifest)
    _one_paragraph(failed, "SlowDown", "after 8 attempts", "rerun later")
    assert proxy.total >= 8
    assert objects(s3) == {}


def test_a_full_destination_during_a_copy_names_the_destination(
    tmp_path: Path, tmpfs: Callable[[str, str], Path]
) -> None:
    """The copy's temporary file is written while the source is read: a full disk names the
    destination store and key, not the source it was reading (`read …`)."""
    from relforge.errors import EnvironmentFault
    from relforge.stores.local import LocalStore

    source = LocalStore(tmp_path / "source")
    data = os.urandom(2 << 20)  # larger than the 1 MiB disk
    digest = hashlib.sha256(data).hexdigest()
    key = "whl/test/big-1.0-py3-none-any.whl"
    assert source.put_if_absent(key, data, digest)
    disk = tmpfs("full", "1m")
    dest = LocalStore(disk / "store")
    release_key = key.replace("/test/", "/release/")
    with pytest.raises(EnvironmentFault) as caught:
        dest.copy_if_absent(source, key, release_key, digest, len(data))
    message = caught.value.message
    assert message.startswith(f"write file://{disk}/store/{release_key}"), message
    assert "No space left on device" in message and "read" not in message, message
    assert "free space" in (caught.value.hint or "")
    assert dest.head(release_key) is None and not list((disk / "store").rglob("*.whl*"))
    assert source.sha256(key) == digest  # the source is untouched


def test_a_full_disk_under_a_download_names_the_file_written(tmp_path: Path) -> None:
    """A download into a file on a full disk (/dev/full) names that file, not the store."""
    from relforge.envfaults import LocalWriteFault
    from relforge.stores.local import LocalStore

    store = LocalStore(tmp_path / "store")
    data = b"x" * 4096
    assert store.put_if_absent("a/b.whl", data, hashlib.sha256(data).hexdigest())
    with pytest.raises(LocalWriteFault) as caught:
        store.download("a/b.whl", Path("/dev/full"))
    assert caught.value.message == "write /dev/full (No space left on device)"
    assert caught.value.exit_code == 6


def test_a_full_disk_under_an_s3_download_names_the_file_not_the_bucket(
    s3: S3, tmpfs: Callable[[str, str], Path]
) -> None:
    """The bytes came from S3 fine: the fault is the local file's, not the service's
    (`get s3://…`), and it is not retried as a transient fault of the service."""
    from relforge.envfaults import LocalWriteFault
    from relforge.stores.s3 import S3Store

    store = S3Store(bucket=s3.bucket, endpoint_url=s3.endpoint)
    data = os.urandom(2 << 20)  # larger than the 1 MiB disk
    assert store.put_if_absent("whl/test/a.whl", data, hashlib.sha256(data).hexdigest())
    disk = tmpfs("full", "1m")
    with pytest.raises(LocalWriteFault) as caught:
        store.download("whl/test/a.whl", disk / "a.whl")
    assert caught.value.message == f"write {disk}/a.whl (No space left on device)"
    assert store.retries == 0
