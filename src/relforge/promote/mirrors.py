"""Mirrors (`publishing.mirrors`): extra stores that `publish` and `promote` fill exactly as the
main store — the same transfers, each create-if-absent and hash-checked, the same pruning and
the same index pages — and that `relforge verify` checks for parity with the manifests.

Each store has a name: `main` for `publishing.store`, the mirror's own name otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from relforge.errors import UsageError
from relforge.matrixstores import NamedStore
from relforge.stores.objectstore import ObjectStore
from relforge.stores.transfer import Batch, Transfer, plan_batch


def select_stores(
    stores: Sequence[NamedStore], name: str | None, matrix_file: str
) -> list[NamedStore]:
    """The store called `name` (main or a mirror), or all of them when no name is given."""
    if name is None:
        return list(stores)
    for named in stores:
        if named.name == name:
            return [named]
    raise UsageError(
        f"no store named {name!r} in {matrix_file}",
        key="--store",
        hint="stores: " + ", ".join(s.name for s in stores),
    )


def mirror_batches(
    mirrors: Sequence[NamedStore],
    transfers: Sequence[Transfer],
    *,
    label: str,
    source: ObjectStore | None = None,
    workers: int = 32,
) -> tuple[Batch, ...]:
    """The same transfers into every mirror (copies read `source`, the main store, and are
    hash-verified on the way like every copy)."""
    return tuple(
        plan_batch(
            m.store,
            transfers,
            source=source,
            label=f"{label} (mirror {m.name})",
            workers=workers,
        )
        for m in mirrors
    )
