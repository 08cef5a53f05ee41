"""A channel's mirrored dependency closure as pip indexes, for runtime validation before
publishing: the wheel folders of a release's cells whose closure `relforge deps mirror`
recorded, served read-only from the store on 127.0.0.1 while the block runs (any store: a
local directory or S3)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from relforge.deps.record import record_key
from relforge.deps.serve import serve_store
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.channel import main_store


@contextlib.contextmanager
def mirrored_closure(
    matrix: Matrix, release: str, channel: ChannelName
) -> Iterator[dict[str, str]]:
    """Channel folder (`whl/test/cpu`) → index URL of its mirrored closure, for the release's
    wheel folders that have one; empty when none has (nothing is served then)."""
    folders = sorted(
        {
            (cell.upload_prefix or "").strip("/")
            for cell in expand_cells(matrix, release, channel=channel)
            if cell.package_type == "wheel" and cell.upload_prefix
        }
    )
    store = main_store(matrix)
    mirrored = [f for f in folders if store.head(record_key(f)) is not None]
    if not mirrored:
        yield {}
        return
    with serve_store(store, mirrored) as base:
        yield {folder: f"{base}/{folder}/" for folder in mirrored}
