"""A channel's mirrored dependency closure as pip indexes, for runtime validation before
publishing: the wheel folders of a release's cells whose closure `relforge deps mirror`
recorded, served read-only from the store on 127.0.0.1 while the block runs (any store: a
local directory or S3)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from relforge.deps.mirrorrecord import record_key
from relforge.deps.serve import serve_store
from relforge.errors import RelforgeError
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrixstores import main_store


@dataclass(frozen=True)
class Closure:
    indexes: dict[str, str]  # channel folder (`whl/test/cpu`) → index URL of its closure
    note: str = ""  # why there is none, when the store could not be read


@contextlib.contextmanager
def mirrored_closure(matrix: Matrix, release: str, channel: ChannelName) -> Iterator[Closure]:
    """The release's wheel folders that have a mirrored closure, each as an index URL; none
    (nothing is served) when no folder has one or the store cannot be read — a build job may
    validate without the store's credentials, and its dependencies are then not installed."""
    folders = sorted(
        {
            (cell.upload_prefix or "").strip("/")
            for cell in expand_cells(matrix, release, channel=channel)
            if cell.package_type == "wheel" and cell.upload_prefix
        }
    )
    try:
        store = main_store(matrix)
        mirrored = [f for f in folders if store.head(record_key(f)) is not None]
    except RelforgeError as exc:
        yield Closure({}, f"no mirrored closure: {exc.message}")
        return
    if not mirrored:
        yield Closure({})
        return
    with serve_store(store, mirrored) as base:
        yield Closure({folder: f"{base}/{folder}/" for folder in mirrored})
