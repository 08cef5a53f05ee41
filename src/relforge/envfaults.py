"""OSErrors that are the machine's fault, not the input's: a read-only or full file system, a
permission denied.  They become `EnvironmentFault` (exit 6) with the path and a hint."""

from __future__ import annotations

import errno
import os
from pathlib import Path

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
