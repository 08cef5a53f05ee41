"""Environment faults outside the stores: the stages that write files or git objects of their
own (workflows, matrix docs, builds, release cuts) on a read-only or full file system.  Each
exits 6 with one paragraph naming the path and a hint — never exit 1 or 2, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.gitrepos import git, make_repos
from tests.integration.test_environment_faults import _one_paragraph, _remount

pytestmark = pytest.mark.slow
Run = Callable[..., Result]
Mount = Callable[[str, str], Path]
EXAMPLE = Path(__file__).parents[2] / "matrix" / "example.yaml"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """Mount a fresh tmpfs of the given size (we are root: chmod would not stop a write)."""
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        options = f"size={size},mode=0755"
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(where: Path) -> None:
    """Use up every byte of a tmpfs."""
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.mark.parametrize("fault", ["ro", "full"])
def test_workflows_generate_into_a_read_only_or_full_directory(
    run: Run, tmpfs: Mount, fault: str
) -> None:
    disk = tmpfs(fault, "64k")
    if fault == "ro":
        _remount(disk, "ro")
    else:
        _fill(disk)
    out = disk / "wf"
    done = run("workflows", "generate", str(EXAMPLE), "-r", "1.0", "--out", str(out), "--no-upload")
    reason = "Read-only file system" if fault == "ro" else "No space left on device"
    _one_paragraph(done, reason, str(disk))
    assert not out.exists() or list(out.iterdir()) == []  # nothing partial


@pytest.mark.parametrize("fault", ["ro", "full"])
def test_matrix_docs_out_on_a_read_only_or_full_directory(
    run: Run, tmpfs: Mount, fault: str
) -> None:
    disk = tmpfs(fault, "64k")
    if fault == "ro":
        _remount(disk, "ro")
    else:
        _fill(disk)
    done = run("matrix", "docs", str(EXAMPLE), "--out", str(disk / "docs.md"))
    reason = "Read-only file system" if fault == "ro" else "No space left on device"
    _one_paragraph(done, reason, f"{disk}/docs.md")
    assert sorted(p.name for p in disk.iterdir()) == ([] if fault == "ro" else ["filler"])


def _last_paragraph(done: Result, *needles: str) -> None:
    """The build prints its plan on stderr first: the error is the paragraph after it."""
    start = done.err.find("environment fault: ")
    assert start >= 0, done.out + done.err
    _one_paragraph(Result(done.code, done.out, done.err[start:]), *needles)


def _first_cell(run: Run) -> str:
    listed = run("matrix", "list", str(EXAMPLE), "-r", "1.0", "--format", "json")
    assert listed.code == 0, listed.err
    import json

    cell: str = json.loads(listed.out)["cells"][0]["id"]
    return cell


def test_build_out_on_a_read_only_directory(run: Run, tmpfs: Mount) -> None:
    disk = tmpfs("ro", "64k")
    _remount(disk, "ro")
    cell = _first_cell(run)
    args = ("build", str(EXAMPLE), "-r", "1.0", "--builder", "host", "--cell", cell)
    done = run(*args, "--out", str(disk / "dist"))
    _last_paragraph(done, "Read-only file system", f"{disk}/dist")


def test_build_logs_in_a_read_only_working_directory(
    run: Run, tmpfs: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmpfs("cwd", "64k")
    _remount(disk, "ro")
    monkeypatch.chdir(disk)
    cell = _first_cell(run)
    args = ("build", str(EXAMPLE), "-r", "1.0", "--builder", "host", "--cell", cell)
    done = run(*args, "--out", str(tmp_path / "dist"))
    _last_paragraph(done, "Read-only file system", f"{disk}/.relforge")


def _repos(root: Path) -> tuple[Path, Path]:
    repos = make_repos(root, {"version.txt": "0.3.0a0\n"})
    return repos.origin, repos.clone


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def test_release_cut_when_the_clone_cannot_store_objects(
    run: Run, tmpfs: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version-bump commit is written into the clone's object store: read-only → exit 6."""
    origin, clone = _repos(tmp_path)
    before = _refs(origin)
    git_dir = clone / ".git"
    subprocess.run(["mount", "--bind", str(git_dir), str(git_dir)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(git_dir)], check=True)
        monkeypatch.chdir(clone)
        done = run("release", "cut", "0.3", "--execute")
    finally:
        subprocess.run(["umount", "-l", str(git_dir)], check=False)
    _one_paragraph(done, "Read-only file system")
    assert _refs(origin) == before
    monkeypatch.chdir(clone)
    assert run("release", "cut", "0.3", "--execute").code == 0  # a rerun finishes the work


def test_release_cut_on_a_full_disk(
    run: Run, tmpfs: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, clone = _repos(tmp_path)
    disk = tmpfs("full", "1m")
    moved = disk / "clone"
    shutil.copytree(clone, moved, symlinks=True)
    _fill(disk)
    before = _refs(origin)
    monkeypatch.chdir(moved)
    done = run("release", "cut", "0.3", "--execute")
    _one_paragraph(done, "No space left on device")
    assert _refs(origin) == before
    (disk / "filler").unlink()
    assert run("release", "cut", "0.3", "--execute").code == 0


def test_release_cut_when_the_remote_cannot_store_the_push(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote's unpacker fails (its disk is read-only): not "the remote moved" (exit 5)."""
    origin, clone = _repos(tmp_path)
    before = _refs(origin)
    subprocess.run(["mount", "--bind", str(origin), str(origin)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(origin)], check=True)
        monkeypatch.chdir(clone)
        done = run("release", "cut", "0.3", "--execute")
    finally:
        subprocess.run(["umount", "-l", str(origin)], check=False)
    _one_paragraph(done, "origin", "unpack")
    assert "the remote moved" not in done.err
    assert _refs(origin) == before
    assert run("release", "cut", "0.3", "--execute").code == 0


def test_build_cache_on_a_read_only_file_system(
    run: Run, tmpfs: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cell builds, then its artifact cannot be stored in the cache: an environment fault
    (exit 6), not a cell failed by an "internal error" (exit 4)."""
    work = tmp_path / "work"
    (work / ".relforge").mkdir(parents=True)
    cache = tmpfs("cache", "64k")
    _remount(cache, "ro")
    (work / ".relforge" / "cache").symlink_to(cache)
    monkeypatch.chdir(work)
    cell = _first_cell(run)
    args = ("build", str(EXAMPLE), "-r", "1.0", "--builder", "host", "--cell", cell)
    done = run(*args, "--out", str(tmp_path / "dist"))
    _last_paragraph(done, "Read-only file system", ".relforge/cache")
    assert "internal error" not in done.out + done.err


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:9/widget.git", "Failed to connect"),  # a closed port
        ("https://no-such-host.invalid/widget.git", "Could not resolve host"),
    ],
)
def test_release_commands_on_an_unreachable_remote(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, said: str
) -> None:
    """A remote that cannot be reached is the network's fault (exit 6), not a bug (exit 1)."""
    _origin, clone = _repos(tmp_path)
    git(clone, "remote", "set-url", "origin", url)
    monkeypatch.chdir(clone)
    for args in (("release", "cut", "0.3"), ("release", "status", "0.3")):
        done = run(*args)
        _one_paragraph(done, said, "origin")


def test_release_cut_when_the_clone_is_immutable(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chattr +i` on the object store: even root gets EPERM.  Not a bug (exit 1)."""
    origin, clone = _repos(tmp_path)
    before = _refs(origin)
    stores = [clone / ".git" / "objects", *(clone / ".git" / "objects").glob("??")]
    subprocess.run(["chattr", "+i", *map(str, stores)], check=True)
    try:
        monkeypatch.chdir(clone)
        done = run("release", "cut", "0.3", "--execute")
    finally:
        subprocess.run(["chattr", "-i", *map(str, stores)], check=True)
    _one_paragraph(done, "Operation not permitted", "immutable")
    assert _refs(origin) == before
    assert run("release", "cut", "0.3", "--execute").code == 0
