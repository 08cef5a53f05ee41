"""Cache folders made once, shared by concurrent builds: made in a temporary folder beside the
final one under a file lock, marked complete, then renamed into place.  A folder without its
`.complete` marker (left by hand, or by an older relforge that wrote in place) is never used:
under the lock nobody else is making it, so it is removed and made again."""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

COMPLETE = ".complete"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if absent) for the block."""
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def made_once(folder: Path, make: Callable[[Path], object]) -> Path:
    """`folder`, made by `make(tmp)` the first time it is asked for; what `make` returns (JSON)
    is written into the folder's `.complete` marker, which says how it was made."""
    if (folder / COMPLETE).exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with locked(folder.parent / f"{folder.name}.lock"):
        if (folder / COMPLETE).exists():  # another build made it while this one waited
            return folder
        if folder.exists():  # unfinished, and nobody is making it: it cannot be trusted
            shutil.rmtree(folder)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            record = make(tmp)
            (tmp / COMPLETE).write_text(json.dumps(record), encoding="utf-8")
            tmp.rename(folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return folder
