"""One command's view of the matrix's publishing section, resolved once and passed down.

A command that reads or changes channels opens the main store, its mirrors and the trust (the
keys manifests must be signed with, and this run's signing key) once, and expands each
channel's cells and root index once: `open_publishing(matrix)` gives the `ResolvedPublishing`, and
`Publishing.channel(name)` the `ChannelContext` of one channel.  Each is opened when first
used, so a command that never needs the mirrors (or the trust) never opens them, and a fault
there surfaces where it did before."""

from __future__ import annotations

import functools
import threading

from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrixstores import MAIN, NamedStore, backup_store, main_store, mirror_stores, trust
from relforge.promote.cells import ChannelCells
from relforge.promote.rootspec import RootSpec, root_spec
from relforge.signing import Trust
from relforge.stores.objectstore import ObjectStore


class ResolvedPublishing:
    """The stores and trust of the matrix's `publishing:` section, each opened once."""

    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        self._channels: dict[ChannelName, ChannelContext] = {}
        self._lock = threading.Lock()

    @functools.cached_property
    def store(self) -> ObjectStore:
        """The main store (`publishing.store`): the root of trust, where manifests live."""
        return main_store(self.matrix)

    @functools.cached_property
    def trust(self) -> Trust:
        return trust(self.matrix)

    @functools.cached_property
    def mirrors(self) -> tuple[NamedStore, ...]:
        return tuple(mirror_stores(self.matrix))

    @functools.cached_property
    def backup(self) -> ObjectStore:
        """Where promotions keep a copy of what they copy (`publishing.backup_store`)."""
        return backup_store(self.matrix)

    def named_stores(self) -> list[NamedStore]:
        """The main store, then every mirror."""
        return [NamedStore(name=MAIN, store=self.store), *self.mirrors]

    def channel(self, name: ChannelName) -> ChannelContext:
        with self._lock:
            found = self._channels.get(name)
            if found is None:
                found = self._channels[name] = ChannelContext(self, name)
            return found


class ChannelContext:
    """One channel of the matrix: its cells and root index, with the publishing it belongs to."""

    def __init__(self, publishing: ResolvedPublishing, name: ChannelName) -> None:
        self.publishing = publishing
        self.name = name
        self.cells = ChannelCells(publishing.matrix, name)

    @property
    def matrix(self) -> Matrix:
        return self.publishing.matrix

    @property
    def store(self) -> ObjectStore:
        return self.publishing.store

    @property
    def trust(self) -> Trust:
        return self.publishing.trust

    @functools.cached_property
    def root(self) -> RootSpec:
        """The channel's root index as the matrix describes it."""
        return root_spec(self.cells)


def open_publishing(matrix: Matrix) -> ResolvedPublishing:
    return ResolvedPublishing(matrix)
