"""The multipart uploads a run has started and not finished, so a rerun resumes them.

An S3 multipart upload can be listed (ListMultipartUploads, ListParts) but not asked what it
was for: its metadata, the object's sha256, shows only once it is complete.  So each upload
relforge starts is recorded here first — store, key, sha256, upload id, part size — one small
JSON file under `.relforge/journal/multipart/`, written atomically and removed when the upload
is completed or aborted.  A rerun that brings the same bytes to the same key finds the record
and continues the upload from the parts the service lists; an upload with no record (another
machine's, a record lost) is never resumed, only aborted once its key holds the object.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from relforge.stores.journal import JOURNAL_DIR


@dataclass(frozen=True, kw_only=True)
class Started:
    """An upload in progress: into `key` of the store at `store`, of bytes with `sha256`."""

    store: str
    key: str
    sha256: str
    upload_id: str
    part_size: int


class UploadBook:
    """The records of started uploads, one file each (safe for parallel writers)."""

    def __init__(self, root: Path | None = None) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        # resolved when used: the journal lives under the working directory of the command
        return self._root if self._root is not None else JOURNAL_DIR / "multipart"

    def _path(self, store: str, key: str, sha256: str) -> Path:
        name = hashlib.sha256(f"{store}\n{key}\n{sha256}".encode()).hexdigest()[:32]
        return self.root / f"{name}.json"

    def find(self, store: str, key: str, sha256: str) -> Started | None:
        """The upload started for these bytes at this key, if one was recorded."""
        try:
            record = json.loads(self._path(store, key, sha256).read_text(encoding="utf-8"))
            started = Started(**record)
        except (OSError, ValueError, TypeError):
            return None  # none, or a record cut short by a kill: start afresh
        if (started.store, started.key, started.sha256) != (store, key, sha256):
            return None
        return started

    def start(self, started: Started) -> None:
        path = self._path(started.store, started.key, started.sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(asdict(started), out, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            Path(name).replace(path)
        finally:
            Path(name).unlink(missing_ok=True)

    def finish(self, store: str, key: str, sha256: str) -> None:
        self._path(store, key, sha256).unlink(missing_ok=True)
