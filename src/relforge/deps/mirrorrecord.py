"""The record of mirrored dependency wheels: what relforge put in a channel folder that it did
not build, so later steps (index, verify) can vouch for those bytes.

One JSON object per wheel folder, at `relforge/deps/<folder>.json` (for example
`relforge/deps/whl/test/cpu.json`), replaced atomically as it grows:

    {"format": 1, "channel": "test", "folder": "whl/test/cpu",
     "files": [{"filename": "six-1.17.0-py2.py3-none-any.whl", "name": "six",
                "version": "1.17.0", "sha256": "…", "size": 11050,
                "upstream_url": "https://files.pythonhosted.org/…/six-1.17.0-py2.py3-none-any.whl",
                "cells": ["wheel-linux-x86_64-py3.12-cpu"]}]}

`files` is sorted by filename; a file is never recorded twice with different sha256.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from relforge.errors import RefusedError, RelforgeError
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore

FORMAT = 1
PREFIX = "relforge/deps"


@dataclass(frozen=True, kw_only=True)
class MirroredFile:
    filename: str
    name: str
    version: str
    sha256: str
    size: int
    upstream_url: str
    cells: tuple[str, ...]
    metadata_sha256: str | None = None  # the PEP 658 sidecar relforge wrote (the wheel's METADATA)
    metadata_size: int | None = None

    def to_json(self) -> dict[str, object]:
        extra: dict[str, object] = {}
        if self.metadata_sha256 is not None:
            extra = {"metadata_sha256": self.metadata_sha256, "metadata_size": self.metadata_size}
        return {
            **extra,
            "filename": self.filename,
            "name": self.name,
            "version": self.version,
            "sha256": self.sha256,
            "size": self.size,
            "upstream_url": self.upstream_url,
            "cells": list(self.cells),
        }


def record_key(folder: str) -> str:
    return f"{PREFIX}/{folder.strip('/')}.json"


def read_record(store: ObjectStore, folder: str) -> dict[str, MirroredFile]:
    """The files recorded for a folder (empty when there is no record yet)."""
    key = record_key(folder)
    if store.head(key) is None:
        return {}
    try:
        data = json.loads(store.get(key))
        files = [
            MirroredFile(
                filename=str(f["filename"]),
                name=str(f["name"]),
                version=str(f["version"]),
                sha256=str(f["sha256"]),
                size=int(f["size"]),
                upstream_url=str(f["upstream_url"]),
                cells=tuple(str(c) for c in f.get("cells", ())),
                metadata_sha256=(
                    str(f["metadata_sha256"]) if f.get("metadata_sha256") is not None else None
                ),
                metadata_size=(
                    int(f["metadata_size"]) if f.get("metadata_size") is not None else None
                ),
            )
            for f in data["files"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise RelforgeError(
            f"{store.url}/{key} is not a dependency record ({exc})",
            hint="it is written by `relforge deps mirror`; remove it and mirror again",
        ) from None
    return {f.filename: f for f in files}


def merge(old: dict[str, MirroredFile], new: Iterable[MirroredFile]) -> dict[str, MirroredFile]:
    out = dict(old)
    for f in new:
        mine = out.get(f.filename)
        if mine is not None and mine.sha256 != f.sha256:
            raise RefusedError(
                f"{f.filename}: recorded with sha256 {mine.sha256}, now {f.sha256}",
                hint="a file name is forever; find out why the upstream changed its bytes",
            )
        cells = tuple(sorted({*(mine.cells if mine else ()), *f.cells}))
        meta = (f.metadata_sha256, f.metadata_size)
        if meta[0] is None and mine is not None:  # a rerun that did not rewrite the sidecar
            meta = (mine.metadata_sha256, mine.metadata_size)
        out[f.filename] = MirroredFile(
            **{**f.__dict__, "cells": cells, "metadata_sha256": meta[0], "metadata_size": meta[1]}
        )
    return out


def record_bytes(channel: str, folder: str, files: dict[str, MirroredFile]) -> bytes:
    page = {
        "format": FORMAT,
        "channel": channel,
        "folder": folder.strip("/"),
        "files": [files[name].to_json() for name in sorted(files)],
    }
    return (json.dumps(page, indent=1) + "\n").encode()


def write_record(
    store: ObjectStore, channel: str, folder: str, files: Iterable[MirroredFile]
) -> bool:
    """Add `files` to the folder's record; False when it already said all that."""
    old = read_record(store, folder)
    merged = merge(old, files)
    if merged == old:
        return False
    store.write(record_key(folder), record_bytes(channel, folder, merged), content_types.JSON)
    return True
