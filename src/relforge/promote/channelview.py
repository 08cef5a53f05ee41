"""A channel view: what a channel's stored manifests vouch for (`Vouchers`) together with the
completeness judgement made from them (`Completeness`: which versions are whole, and so may be
advertised).

The judgement depends on the vouchers, never the other way: `view_of` makes the vouchers'
judgement and the frozen `ChannelView` holding both, and nothing is assigned to either
afterwards.  `channel_view` makes the view of a channel of a command's publishing context.
Code that only reads manifests takes `Vouchers`; code that decides what the pages advertise
(the index, pruning, verify) takes the view.
"""

from __future__ import annotations

from dataclasses import dataclass

from relforge.promote.cells import ChannelCells
from relforge.promote.completeness import Completeness
from relforge.promote.publishing import ChannelContext
from relforge.promote.rootspec import RootSpec
from relforge.promote.vouch import Vouchers
from relforge.stores.objectstore import ObjectStore


@dataclass(frozen=True)
class ChannelView:
    """One channel's vouchers and their completeness judgement (made by `view_of`)."""

    vouchers: Vouchers
    completeness: Completeness  # judges from `vouchers`, and from nothing else

    def __post_init__(self) -> None:
        if self.completeness.vouchers is not self.vouchers:
            raise ValueError("a channel view's judgement must read the view's own vouchers")

    @property
    def root(self) -> RootSpec | None:
        """The channel-root pages written after the variant pages."""
        return self.vouchers.root

    def fresh(self) -> ChannelView:
        """The same channel read again, nothing read yet, judged anew: the view of a run that
        must see the manifests another run stored since this view read them."""
        judged = self.completeness
        return view_of(
            self.vouchers.fresh(), judged.cells, partial=judged.partial, workers=judged.workers
        )


def view_of(
    vouchers: Vouchers, cells: ChannelCells, *, partial: bool = False, workers: int = 16
) -> ChannelView:
    """The view of `vouchers`, judged against the matrix's cells of the channel so that only
    whole versions are advertised (`partial`: incomplete ones too, reported)."""
    judged = Completeness(cells, vouchers, partial=partial, workers=workers)
    return ChannelView(vouchers, judged)


def channel_view(
    channel: ChannelContext,
    *,
    store: ObjectStore | None = None,
    workers: int = 16,
    partial: bool = False,
) -> ChannelView:
    """What the manifests stored in the channel (of the main store, or `store`) vouch for, for
    the matrix's project, judged so that only whole versions are advertised (`partial`:
    incomplete ones too, reported)."""
    matrix = channel.matrix
    settings = matrix.channels.get(channel.name)
    vouchers = Vouchers(
        channel.store if store is None else store,
        channel=channel.name,
        project=matrix.project.name,
        prefix=settings.prefix,
        trust=channel.trust,
        workers=workers,
        root=channel.root,
        archive_prefix=settings.libtorch_prefix,
    )
    return view_of(vouchers, channel.cells, partial=partial, workers=workers)
