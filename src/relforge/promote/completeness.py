"""Whole releases only: a version is advertised in a channel only when every cell the matrix
expects of it there is stored and verified against a stored manifest.

Per-cell CI jobs publish one cell each; a page rebuilt after the first of them must not list a
version that has, say, only its aarch64 wheels (vllm-project/vllm#49683).  So the set of files
the index advertises (every page and anything derived from that set) leaves out each version
that is not complete:

- expected: the cells of the version's release (named by its stored manifests) that publish to
  the channel, as the matrix expands them now (`expected_cells`);
- present and verified: a stored manifest of the version names the cell, and the store holds
  that object with the manifest's sha256 (a drifted object does not count; a yanked one does:
  yanking hides nothing from this count).

A release the matrix no longer has cannot be judged and stays advertised as before.  Nightly
versions are judged one by one (each `X.devYYYYMMDD` is its own whole release): yesterday's
complete nightly stays on the pages while tonight's cells arrive.  `partial` (the `--partial`
flag) advertises incomplete versions anyway.  A version once advertised stays advertised
(advertised.py): a matrix that grows later does not hide a shipped version, and a `--partial`
decision holds (still reported as incomplete) until its record is deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from relforge.errors import RefusedError
from relforge.matrix.cell import Cell
from relforge.promote.advertised import read_advertised, write_advertised
from relforge.promote.cells import ChannelCells
from relforge.stores.objectstore import ObjectStore

# The package types whose files a version must have in a channel before it is advertised: its
# wheels and its native archives.  The generated CI uploads them from separate workflows, each
# ending with an index job (serialized per channel), so whichever finishes last puts the whole
# version on the pages; a version's pip pages wait for its zips as its zips wait for its wheels.
PUBLISHED_TYPES = frozenset({"wheel", "archive"})


def expected_cells(cells: ChannelCells, release: str) -> list[Cell]:
    """The cells of `release` whose artifacts every version of it must have in the channel."""
    return [c for c in cells.of(release) if c.package_type in PUBLISHED_TYPES and c.upload_prefix]


def release_folders(cells: ChannelCells, releases: Iterable[str]) -> set[str]:
    """The index folders of the releases' expected wheel cells: the cell that completes a
    version changes the pages of every one of them, not only its own folder's."""
    return {
        c.upload_prefix.rstrip("/")
        for release in set(releases)
        if release in cells.matrix.releases
        for c in expected_cells(cells, release)
        if c.package_type == "wheel" and c.upload_prefix
    }


class VouchedFile(Protocol):
    """What the judgement reads of one vouched object (relforge.promote.vouch.Vouch)."""

    @property
    def key(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def cell(self) -> str: ...
    @property
    def release(self) -> str: ...


class VouchReader(Protocol):
    """What the judgement reads of a channel's stored manifests (relforge.promote.vouch.Vouchers:
    the judgement is made from them, and they know nothing of it; channelview.py holds both)."""

    store: ObjectStore
    channel: str
    project: str

    def lookup(
        self, versions: Iterable[str], *, archives: bool = False
    ) -> Mapping[str, VouchedFile]: ...

    def fresh(self) -> VouchReader: ...


@dataclass(frozen=True, kw_only=True)
class CellState:
    cell: str
    key: str = ""  # where the manifest puts it ("" when no stored manifest names the cell)
    problem: str = ""  # "" when present and verified


@dataclass(frozen=True, kw_only=True)
class VersionState:
    """How much of one version a channel holds."""

    version: str
    releases: tuple[str, ...] = ()
    cells: tuple[CellState, ...] = ()
    judged: bool = True  # False: the release is not in the matrix (nothing to compare with)
    exposed: bool = True  # advertised on the pages (complete, unjudged, or --partial)
    recorded: str = ""  # "whole" / "partial": an earlier run advertised it (advertised.py)

    @property
    def missing(self) -> tuple[CellState, ...]:
        return tuple(c for c in self.cells if c.problem)

    @property
    def complete(self) -> bool:
        return not self.judged or not self.missing

    def missing_text(self) -> str:
        return "; ".join(
            f"{c.cell} ({c.problem})" if c.problem != NOT_UPLOADED else c.cell for c in self.missing
        )

    def line(self) -> str:
        """`1.0: 3 of 8 cells uploaded; not on the pages until complete; missing: …`"""
        if not self.judged:
            return (
                f"{self.version}: release {', '.join(self.releases)} is not in the matrix; "
                "its completeness is not checked"
            )
        done = len(self.cells) - len(self.missing)
        head = f"{self.version}: {done} of {len(self.cells)} cells uploaded and verified"
        if self.complete:
            return head + "; complete, on the pages"
        where = "not on the pages until complete"
        if self.recorded == "whole":
            where = "on the pages (it was whole when first advertised)"
        elif self.exposed:
            where = "ON THE PAGES ANYWAY (--partial" + (
                ", recorded earlier)" if self.recorded else ")"
            )
        return f"{head}; {where}; missing: {self.missing_text()}"


NOT_UPLOADED = "not uploaded"
DRIFTED = "drifted: "


@dataclass(frozen=True, kw_only=True)
class Incoming:
    """An object a plan is about to write, counted as present and verified in its projection."""

    cell: str
    key: str
    sha256: str
    release: str


class Completeness:
    """The completeness judgement: which versions of the project the channel's pages may
    advertise, judged once per (store, version) in a run.  `incoming` projects a plan's uploads
    (dry-run reports)."""

    def __init__(
        self,
        cells: ChannelCells,
        vouchers: VouchReader,
        *,
        partial: bool = False,
        incoming: Mapping[str, Iterable[Incoming]] | None = None,  # version → objects
        workers: int = 16,
    ) -> None:
        self.cells = cells
        self.matrix = cells.matrix
        self.channel = cells.channel
        self.vouchers = vouchers
        self.partial = partial
        self.incoming = {v: tuple(i) for v, i in (incoming or {}).items()}
        self.workers = workers
        self._expected: dict[str, dict[str, Cell]] = {}
        self._states: dict[tuple[str, str], VersionState] = {}
        self._advertised: dict[str, str] | None = None
        self._lock = threading.Lock()

    def projected(self, incoming: Mapping[str, Iterable[Incoming]]) -> Completeness:
        """The same judgement, with a plan's uploads counted as already there (on its own reading
        of the manifests: the plan's judgement must read them after the plan stored its own)."""
        fresh = self.vouchers.fresh()
        return Completeness(
            self.cells,
            fresh,
            partial=self.partial,
            incoming=incoming,
            workers=self.workers,
        )

    def exposed(self, store: ObjectStore, versions: Iterable[str]) -> set[str]:
        """The versions among `versions` whose files may be advertised in `store`."""
        wanted = sorted(set(versions))
        with ThreadPoolExecutor(max(1, min(self.workers, len(wanted) or 1))) as pool:
            states = list(pool.map(lambda v: self.state(store, v), wanted))
        return {s.version for s in states if s.exposed}

    def drift(self, store: ObjectStore, versions: Iterable[str]) -> list[str]:
        """One line per expected object of these versions whose bytes are not its manifest's:
        drift is refused (exit 5, no page written), whether or not the version is whole."""
        return [
            f"{c.key} ({c.cell}): {c.problem.removeprefix(DRIFTED)}"
            for v in sorted(set(versions))
            for c in self.state(store, v).missing
            if c.problem.startswith(DRIFTED)
        ]

    def states(self) -> list[VersionState]:
        """Every version judged so far in this run (of the main store)."""
        with self._lock:
            found = [s for (url, _), s in self._states.items() if url == self.vouchers.store.url]
        return sorted(found, key=lambda s: s.version)

    def state(self, store: ObjectStore, version: str) -> VersionState:
        with self._lock:
            known = self._states.get((store.url, version))
        if known is not None:
            return known
        found = self._judge(store, version)
        with self._lock:
            self._states[(store.url, version)] = found
        return found

    def _cells(self, release: str) -> dict[str, Cell] | None:
        if release not in self.matrix.releases:
            return None
        with self._lock:
            known = self._expected.get(release)
        if known is None:
            known = {c.id: c for c in expected_cells(self.cells, release)}
            with self._lock:
                self._expected[release] = known
        return known

    def _judge(self, store: ObjectStore, version: str) -> VersionState:
        vouched = self.vouchers.lookup([version], archives=True)
        by_cell = {v.cell: (v.key, v.sha256, v.release) for v in vouched.values() if v.cell}
        for item in self.incoming.get(version, ()):
            by_cell.setdefault(item.cell, (item.key, item.sha256, item.release))
        arriving = {i.key for i in self.incoming.get(version, ())}
        releases = tuple(sorted({r for _, _, r in by_cell.values() if r}))
        if not releases:  # nothing of ours vouches for it: the index reports it as unvouched
            return VersionState(version=version)
        expected: dict[str, Cell] = {}
        for release in releases:
            cells = self._cells(release)
            if cells is None:
                return VersionState(version=version, releases=releases, judged=False)
            expected.update(cells)
        recorded = self._recorded().get(version, "")
        states = []
        for cell_id in sorted(expected):
            found = by_cell.get(cell_id)
            if found is None:
                states.append(CellState(cell=cell_id, problem=NOT_UPLOADED))
                continue
            key, sha, _ = found
            # a version that shipped whole stays: no store request per cell on every run (the
            # index still checks the bytes of each file it (re)advertises)
            problem = "" if recorded == "whole" else _problem(store, key, sha, arriving)
            states.append(CellState(cell=cell_id, key=key, problem=problem))
        state = VersionState(version=version, releases=releases, cells=tuple(states))
        return VersionState(
            version=version,
            releases=releases,
            cells=tuple(states),
            exposed=state.complete or self.partial or bool(recorded),
            recorded=recorded,
        )

    def _recorded(self) -> dict[str, str]:
        """Versions an earlier run advertised, whole or partial (read once)."""
        with self._lock:
            if self._advertised is None:
                v = self.vouchers
                self._advertised = read_advertised(v.store, v.channel, v.project)
            return self._advertised

    def record(self, mirrors: Iterable[ObjectStore] = ()) -> list[tuple[str, bool]]:
        """Record each version this run advertised for the first time (in the main store,
        beside the manifests, and in each mirror); returns (key, whole) of each record."""
        v = self.vouchers
        out = []
        for s in self.states():
            if not s.judged or not s.cells or not s.exposed or s.recorded:
                continue
            for store in (v.store, *mirrors):
                key = write_advertised(
                    store,
                    v.channel,
                    v.project,
                    s.version,
                    whole=s.complete,
                    verified=[c.cell for c in s.cells if not c.problem],
                    missing={c.cell: c.problem for c in s.missing},
                )
            out.append((key, s.complete))
        return out


def _problem(store: ObjectStore, key: str, sha256: str, arriving: set[str]) -> str:
    """ "" when the store holds the manifest's bytes at `key` (or the plan is writing them)."""
    if key in arriving:
        return ""
    try:
        got = store.sha256(key)
    except RefusedError as exc:
        return DRIFTED + exc.message
    if got is None:
        return NOT_UPLOADED
    if got != sha256:
        return f"{DRIFTED}the store holds sha256 {got}, the manifest says {sha256}"
    return ""


@dataclass(frozen=True, kw_only=True)
class CompletenessReport:
    """What a run did about whole releases, for its summary and JSON output."""

    states: tuple[VersionState, ...] = field(default=())
    partial: bool = False

    @property
    def incomplete(self) -> tuple[VersionState, ...]:
        return tuple(s for s in self.states if not s.complete)

    @property
    def exposed_partial(self) -> tuple[VersionState, ...]:
        return tuple(s for s in self.incomplete if s.exposed and s.recorded != "whole")

    def lines(self) -> list[str]:
        out = [s.line() for s in self.states if not s.complete or not s.judged]
        if self.exposed_partial:
            names = ", ".join(s.version for s in self.exposed_partial)
            out.append(
                f"WARNING: incomplete version(s) {names} are on the pages (--partial); "
                "installers can pick a version that lacks their platform's files"
            )
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "partial": self.partial,
            "versions": [
                {
                    "version": s.version,
                    "releases": list(s.releases),
                    "judged": s.judged,
                    "complete": s.complete,
                    "on_pages": s.exposed,
                    "recorded": s.recorded or None,
                    "expected": len(s.cells),
                    "verified": len(s.cells) - len(s.missing),
                    "missing": {c.cell: c.problem for c in s.missing},
                }
                for s in self.states
            ],
        }


def whole_releases_report(
    completeness: Completeness, versions: Iterable[str] | None = None
) -> CompletenessReport:
    """The states the completeness judgement found (only `versions` when given)."""
    wanted = set(versions) if versions is not None else None
    states = [s for s in completeness.states() if wanted is None or s.version in wanted]
    return CompletenessReport(states=tuple(states), partial=completeness.partial)
