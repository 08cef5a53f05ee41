"""The cells of one channel, expanded once per command.

Expansion applies the channel's version scheme and prefixes, so a cell's version and upload
folder differ by channel: each command reads a channel's cells from one `ChannelCells`, which
expands each release the first time it is asked for and keeps it (expansion is pure: the same
matrix, release and channel give the same cells)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix


class ChannelCells:
    """The matrix's cells on `channel`, release by release, each expanded once."""

    def __init__(self, matrix: Matrix, channel: ChannelName) -> None:
        self.matrix = matrix
        self.channel = channel
        self._by_release: dict[str, tuple[Cell, ...]] = {}
        self._by_id: dict[str, dict[str, Cell]] = {}
        self._lock = threading.Lock()  # the completeness judgement asks from worker threads

    def of(self, release: str) -> tuple[Cell, ...]:
        """The release's cells on this channel."""
        with self._lock:
            cells = self._by_release.get(release)
            if cells is None:
                cells = tuple(expand_cells(self.matrix, release, channel=self.channel))
                self._by_release[release] = cells
                self._by_id[release] = {c.id: c for c in cells}
            return cells

    def by_id(self, release: str) -> dict[str, Cell]:
        """The release's cells on this channel by cell id."""
        self.of(release)
        return self._by_id[release]

    def every(self) -> Iterator[Cell]:
        """The cells of every release of the matrix, release by release as written."""
        for release in self.matrix.releases:
            yield from self.of(release)
