"""The journal of an applied plan: JSON lines under `.relforge/journal/`, one per finished
action, flushed and fsync'd as it goes.  A killed run leaves the journal open; the rerun of the
same plan (same digest) reads what was done, re-verifies it and carries on.  Correctness does
not rest on the journal — every write is create-if-absent and every object's hash is checked —
it tells what an interrupted run got done and what the finished run did.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

JOURNAL_DIR = Path(".relforge") / "journal"


class Journal:
    def __init__(self, command: str, digest: str, root: Path = JOURNAL_DIR) -> None:
        self.path = root / f"{command}-{digest[:16]}.jsonl"
        self.digest = digest
        self.done: set[str] = set()
        self.complete = False
        self._fd: int | None = None
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill
                if "done" in record:
                    self.done.add(record["done"])
                self.complete = self.complete or bool(record.get("complete"))

    @property
    def resumed(self) -> bool:
        return bool(self.done) and not self.complete

    def open(self, summary: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if fresh:
            self._append({"plan": self.digest, "started": time.time(), **summary})
        elif self.complete:
            self._append({"rerun": time.time()})
        else:
            self._append({"resumed": time.time(), "already_done": len(self.done)})

    def record(self, action: str, **facts: Any) -> None:
        self.done.add(action)
        self._append({"done": action, **facts})

    def finish(self) -> None:
        self._append({"complete": True, "finished": time.time()})
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _append(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        os.write(self._fd, (json.dumps(record, sort_keys=True) + "\n").encode())
        os.fsync(self._fd)
