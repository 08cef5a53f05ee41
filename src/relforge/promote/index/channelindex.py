"""`relforge index`: rebuild the pages of every wheel folder of one channel, then its channel-root
pages, advertising only whole versions (relforge.promote.completeness) unless `partial`.

`plan_channel_index` reads the store and plans every folder (nothing written; drift refused);
`apply_channel_index` records the versions advertised for the first time, then writes the
changed folders' pages and the root pages.  The record comes first: a run killed between page
writes leaves the decision behind, and the next run finishes it the same way.

Of the nightly channel it also prunes (prune.py: `publish --no-index` leaves that to this
command): the pruned wheels are left off the pages and deleted after all of them are
written, so no page links a deleted file; a run killed before the deletes plans them again.

`reindex` rebuilds a few folders and the root after another command changed what they vouch
for (yank, the dependency mirror).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.channel import wheel_folders
from relforge.promote.channellease import LeaseScope
from relforge.promote.channelview import ChannelView, channel_view
from relforge.promote.index.folder import (
    FolderPlan,
    apply_folder,
    plan_folder,
    read_folder,
    refuse_drift,
)
from relforge.promote.index.prune import channel_prune
from relforge.promote.index.rootpages import RootPlan
from relforge.promote.index.settle import settle_root
from relforge.promote.publishing import open_publishing
from relforge.stores.objectstore import ObjectInfo, ObjectStore
from relforge.stores.retry import total_retries


@dataclass(frozen=True, kw_only=True)
class ChannelIndex:
    """The planned index of one channel in the main store."""

    channel: ChannelName
    store: ObjectStore
    view: ChannelView  # the channel's vouchers and completeness judgement the pages come from
    plans: tuple[FolderPlan, ...]
    deletes: tuple[str, ...] = ()  # nightly wheels pruned once the pages no longer list them

    @property
    def changed(self) -> list[FolderPlan]:
        return [p for p in self.plans if p.changed]


@dataclass(frozen=True, kw_only=True)
class IndexOutcome:
    recorded: tuple[tuple[str, bool], ...]  # advertised records written: (key, whole)
    root: str | None  # what happened to the channel-root pages (None: the channel has none)
    retries: int
    deleted: int = 0


@dataclass(frozen=True, kw_only=True)
class IndexRequest:
    """What `relforge index` asks for: the pages of every wheel folder of `channel` of
    `matrix`; `partial`: every version advertised, whole or not."""

    matrix: Matrix
    channel: ChannelName
    partial: bool = False
    workers: int = 32


def plan_channel_index(request: IndexRequest, lease: LeaseScope | None = None) -> ChannelIndex:
    """Every wheel folder of `channel` planned against the stored manifests; refuses (exit 5)
    when an object's bytes differ from its manifest's.  Reads only (`lease`: the channel's
    lease is taken first, for the run that applies this plan)."""
    matrix, channel = request.matrix, request.channel
    partial, workers = request.partial, request.workers
    here = open_publishing(matrix).channel(channel)
    store = here.store
    if lease is not None:
        lease.take(store, [channel])
    view = channel_view(here, workers=min(workers, 16), partial=partial)
    folders = wheel_folders(here.cells)
    deletes: tuple[str, ...] = ()
    infos: dict[str, list[ObjectInfo]] = {}
    if channel == "nightly":  # one listing of each folder for the pruning and the pages
        infos = {f: read_folder(store, f) for f in folders}
        deletes = channel_prune(matrix, store, view.completeness, infos)
    absent = frozenset(deletes)
    plans = tuple(
        plan_folder(store, f, view, workers=workers, absent=absent, infos=infos.get(f))
        for f in folders
    )
    refuse_drift(list(plans), store)
    return ChannelIndex(channel=channel, store=store, view=view, plans=plans, deletes=deletes)


def apply_channel_index(index: ChannelIndex, *, workers: int = 32) -> IndexOutcome:
    """Record what becomes advertised, then write the changed folders and the root pages."""
    recorded = tuple(index.view.completeness.record())
    for plan in index.changed:
        apply_folder(index.store, plan, workers=workers)
    root, _ = settle_root(index.store, index.view, workers=workers, absent=frozenset(index.deletes))
    for key in index.deletes:  # no page lists them any more
        index.store.delete(key)
    return IndexOutcome(
        recorded=recorded,
        root=root.describe() if root is not None else None,
        retries=total_retries([index.store]),
        deleted=len(index.deletes),
    )


def reindex(
    store: ObjectStore, folders: Sequence[str], view: ChannelView, *, workers: int = 16
) -> tuple[list[str], RootPlan | None]:
    """Rebuild the pages of `folders` from `view` after a command changed what they vouch
    for (a yank record, a dependency record), then the channel root: drift in any folder is
    refused before a page is written.  The folders whose pages changed, and the root's plan."""
    plans = [plan_folder(store, f, view, workers=workers) for f in folders]
    refuse_drift(plans, store)
    for plan in plans:
        if plan.changed:
            apply_folder(store, plan, workers=workers)
    root, settled = settle_root(store, view, workers=workers)
    return [p.folder for p in plans if p.changed] + [p.folder for p in settled], root
