"""The source tree a build sees: which files, their content digest, and a snapshot copy.

Files come from git when the tree is in a repository (tracked plus untracked-but-not-ignored,
so `.gitignore` decides), otherwise from a walk that leaves out VCS and build-output folders.
Either way, what relforge itself writes or reads there is left out too, whatever its name
(`leave_out`: the output folder, the state folder, the matrix file), and so is every folder
holding a relforge manifest (the output of an earlier build with another `--out`), so `--out`
inside the source, or a comment in a matrix kept in the source, does not change the tree.  The
digest covers each file's path, executable bit and content; the snapshot holds exactly those
files, so a cached result always belongs to what was built.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from relforge.errors import UsageError
from relforge.git import GitMissing, run_git_bytes
from relforge.gitfaults import fault_of
from relforge.manifest import MANIFEST_NAME, sha256_file

# Never part of a build's input: VCS data, caches, and what builds and relforge write.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".relforge",
        "__pycache__",
        ".venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "build",
        "dist",
        "wheelhouse",
    }
)


@dataclass(frozen=True, kw_only=True)
class SourceTree:
    root: Path
    files: tuple[str, ...]  # POSIX paths relative to root, sorted
    digest: str

    def snapshot(self, dest: Path) -> Path:
        """Copy the tree's files to `dest` (made fresh); returns `dest`."""
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for rel in self.files:
            src = self.root / rel
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                target.symlink_to(src.readlink())
            else:
                shutil.copy2(src, target)
        return dest


def scan_source(root: Path, *, leave_out: Iterable[Path] = ()) -> SourceTree:
    """List and hash the build input under `root`, without the files and folders `leave_out`
    names (those outside `root` change nothing)."""
    if not root.is_dir():
        raise UsageError(
            f"source tree {root} is not a directory",
            key="--source",
            hint="pass --source DIR or set project.build.source in the matrix",
        )
    root = root.resolve()
    left = _inside(root, leave_out)
    listed = set(_listed(root, left))
    left |= {rel.rpartition("/")[0] or rel for rel in listed if _is_manifest(rel)}
    files = sorted(rel for rel in listed if not _left_out(rel, left))
    digest = hashlib.sha256()
    for rel in files:
        path = root / rel
        info = path.lstat()
        digest.update(rel.encode() + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"L" + str(path.readlink()).encode())
        else:
            digest.update(b"X" if info.st_mode & stat.S_IXUSR else b"F")
            digest.update(sha256_file(path).encode())
        digest.update(b"\0")
    return SourceTree(root=root, files=tuple(files), digest=digest.hexdigest())


def _inside(root: Path, paths: Iterable[Path]) -> frozenset[str]:
    """The POSIX paths relative to `root` of those of `paths` inside it (not root itself)."""
    out = set()
    for path in paths:
        try:
            rel = path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel != ".":
            out.add(rel)
    return frozenset(out)


def _is_manifest(rel: str) -> bool:
    return rel.rpartition("/")[2] == MANIFEST_NAME


def _left_out(rel: str, left: frozenset[str]) -> bool:
    """Whether `rel` is one of `left` or lies in one of them."""
    return any(rel == p or rel.startswith(f"{p}/") for p in left)


def _listed(root: Path, left: frozenset[str]) -> Iterator[str]:
    tracked = _git_files(root)
    if tracked is None:
        yield from _walk(root, root, left)
        return
    for rel in tracked:
        path = root / rel
        if path.is_dir() and not path.is_symlink():  # a submodule: take its files
            yield from _walk(root, path, left)
        elif (path.is_file() or path.is_symlink()) and not _skipped(rel):
            yield rel  # (a tracked file deleted in the worktree is neither)


def _git_files(root: Path) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files, or None outside a repository (or git)."""
    try:
        done = run_git_bytes(
            "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"
        )
    except (GitMissing, OSError):
        return None
    if done.code != 0:
        fault = fault_of(done)  # a repository git cannot read is no reason to walk past it
        if fault is not None:
            raise fault
        return None
    return [p for p in done.out.decode("utf-8", "surrogateescape").split("\0") if p]


def _walk(root: Path, top: Path, left: frozenset[str]) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(top):
        base = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not _skipped_dir(d) and not _left_out((base / d).relative_to(root).as_posix(), left)
        )
        for name in filenames:
            if not name.endswith((".pyc", ".pyo")):
                yield (base / name).relative_to(root).as_posix()


def _skipped_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def _skipped(rel: str) -> bool:
    return any(_skipped_dir(part) for part in rel.split("/")[:-1])
