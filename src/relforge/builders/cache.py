"""The build cache: finished artifacts stored under a key that hashes everything a build's
output depends on (source content, cell, builder identity such as the image id, build command,
repair policy, relforge version), so an unchanged cell is reused instead of rebuilt."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.manifest import sha256_file

_ENTRY = "entry.json"


def cache_key(parts: Mapping[str, Any]) -> str:
    """sha256 of the parts as canonical JSON."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class CachedArtifact:
    path: Path
    size: int
    sha256: str
    info: Mapping[str, Any]  # what the build recorded (builder, seconds, …)


class BuildCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> CachedArtifact | None:
        folder = self._dir(key)
        try:
            entry = json.loads((folder / _ENTRY).read_text(encoding="utf-8"))
            path = folder / str(entry["file"])
            if path.stat().st_size != int(entry["size"]) or sha256_file(path) != entry["sha256"]:
                return None  # damaged: rebuild rather than hand out other bytes as the build
            return CachedArtifact(
                path=path, size=int(entry["size"]), sha256=str(entry["sha256"]), info=entry["info"]
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, artifact: Path, info: Mapping[str, Any]) -> CachedArtifact:
        """Store a copy of `artifact` (atomically: a reader sees all of an entry or none)."""
        folder = self._dir(key)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}.", dir=folder.parent))
        try:
            shutil.copyfile(artifact, tmp / artifact.name)
            size = (tmp / artifact.name).stat().st_size
            digest = sha256_file(tmp / artifact.name)
            entry = {"file": artifact.name, "size": size, "sha256": digest, "info": dict(info)}
            (tmp / _ENTRY).write_text(json.dumps(entry, indent=2, default=str), encoding="utf-8")
            if folder.exists():  # another run stored the same key meanwhile
                shutil.rmtree(folder)
            tmp.rename(folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return CachedArtifact(path=folder / artifact.name, size=size, sha256=digest, info=info)
