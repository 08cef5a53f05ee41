"""OSErrors that are the machine's fault, not the input's: a read-only or full file system, a
permission denied.  They become `EnvironmentFault` (exit 6) with the path and a hint."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from relforge.errors import EnvironmentFault

# errno → what to tell a user about it
HINTS: dict[int, str] = {
    errno.EACCES: "permission denied: give this user write access (or pick another path) and rerun",
    errno.EPERM: "the operation is not permitted here (an immutable file or a restrictive "
    "mount?): fix it and rerun",
    errno.EROFS: "the file system is mounted read-only: remount it read-write (or pick another "
    "path) and rerun",
    errno.ENOSPC: "the disk is full: free space and rerun (a rerun finishes the work)",
    errno.EDQUOT: "the disk quota is exhausted: free space and rerun (a rerun finishes the work)",
    errno.EIO: "the disk (or the network file system) failed to read or write: check it and rerun",
    errno.EMFILE: "this process may open no more files: raise the limit (ulimit -n) and rerun",
    errno.ENFILE: "the system may open no more files: close some (or raise fs.file-max) and rerun",
}


def is_environment_fault(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in HINTS


def environment_fault(exc: OSError, what: str, key: str | None = None) -> EnvironmentFault:
    """`exc` as one paragraph: `what` failed (naming the store/key), on which path, and why."""
    path = str(Path.cwd() / os.fsdecode(exc.filename)) if exc.filename is not None else ""
    reason = exc.strerror or type(exc).__name__
    where = f" ({path}: {reason})" if path else f" ({reason})"
    return EnvironmentFault(
        f"{what}{where}",
        key=key,
        hint=HINTS.get(exc.errno or 0, "fix the file system and rerun"),
    )


class LocalWriteFault(EnvironmentFault):
    """Writing a local file failed (the machine's side of a download, not the store read).

    An EnvironmentFault, not an OSError, so the read side's fault wrapper lets it through; a
    caller whose file is a store's temporary object names that store and key instead
    (`error` is the OSError)."""

    def __init__(self, error: OSError, path: Path) -> None:
        told = environment_fault(error, f"write {path}")
        super().__init__(told.message, hint=told.hint)
        self.error = error
        self.path = path


class _WriteSide:
    """A file opened for writing whose faults name the file (see `writing`)."""

    def __init__(self, file: BinaryIO, path: Path) -> None:
        self._file = file
        self._path = path

    def write(self, data: bytes | memoryview) -> int:
        with _write_faults(self._path):
            return self._file.write(data)

    def fileno(self) -> int:
        return self._file.fileno()

    def seek(self, offset: int) -> int:
        with _write_faults(self._path):
            return self._file.seek(offset)

    def truncate(self) -> int:
        with _write_faults(self._path):
            return self._file.truncate()

    def pwrite(self, data: bytes | memoryview, offset: int) -> int:
        with _write_faults(self._path):
            return os.pwrite(self._file.fileno(), data, offset)


@contextlib.contextmanager
def _write_faults(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if not is_environment_fault(exc):
            raise
        raise LocalWriteFault(exc, path) from None


@contextlib.contextmanager
def writing(path: Path) -> Iterator[_WriteSide]:
    """`path` opened for writing (unbuffered, so a full disk fails the write that hit it, not a
    later close): a fault of its open, writes or close is a LocalWriteFault naming `path`, told
    apart from the faults of reading what is written into it."""
    with _write_faults(path):
        file = path.open("wb", buffering=0)
    try:
        yield _WriteSide(file, path)
    finally:
        with _write_faults(path):
            file.close()
