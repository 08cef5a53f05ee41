"""`relforge yank`: mark a version's files yanked (PEP 592) on every channel that holds them.

The yank lives in each channel's yank record (relforge.promote.yanked), never only in a page:
the index reads the record whenever it builds a page, so re-indexing, publish and promote keep
it.  Applying the plan writes the records, then rebuilds the touched folders' pages.

The plan and what applying it did come in the shapes a command gives them: the lines people
read, versioned JSON for machines (one shape for the dry run and the run: `done` is null until
the plan is applied) and the markdown of the job's step summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from relforge.errors import NothingToDoError, UsageError
from relforge.matrix.schema import ChannelName, Matrix
from relforge.output import in_place, summary_with_list, versioned
from relforge.promote.channellease import LeaseScope
from relforge.promote.channelview import ChannelView, channel_view
from relforge.promote.index.channelindex import reindex
from relforge.promote.publishing import open_publishing
from relforge.promote.yanked import read_yanked, write_yanked
from relforge.stores.objectstore import ObjectStore

CHANNELS: tuple[ChannelName, ...] = ("test", "release", "nightly")
SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class YankChange:
    channel: ChannelName
    key: str
    cell: str
    before: str | None  # the reason it is yanked now (None: not yanked)
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def line(self) -> str:
        """`+` yanked, `-` unyanked, `=` left as it is (already in the state asked for)."""
        if not self.changed:
            state = "already yanked" if self.after is not None else "not yanked"
            return f"  = {self.channel}: {self.key} ({state})"
        if self.after is None:
            return f"  - {self.channel}: {self.key} (yanked: {self.before!r}) → not yanked"
        was = f" (was {self.before!r})" if self.before is not None else ""
        return f"  + {self.channel}: {self.key} → yanked: {self.after!r}{was}"

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "key": self.key,
            "cell": self.cell,
            "before": self.before,
            "after": self.after,
            "changed": self.changed,
        }


@dataclass(frozen=True, kw_only=True)
class YankPlan:
    version: str
    undo: bool
    store: ObjectStore
    mirrors: tuple[ObjectStore, ...]  # re-indexed like the main store (its record rules them)
    files: tuple[YankChange, ...]
    views: dict[ChannelName, ChannelView]  # of each channel with a file: what it vouches for

    @property
    def changes(self) -> tuple[YankChange, ...]:
        return tuple(f for f in self.files if f.changed)

    def folders(self) -> dict[ChannelName, list[str]]:
        out: dict[ChannelName, list[str]] = {}
        for f in self.files:
            folder = f.key.rsplit("/", 1)[0]
            if folder not in out.setdefault(f.channel, []):
                out[f.channel].append(folder)
        return out

    @property
    def verb(self) -> str:
        return "unyank" if self.undo else "yank"

    def lines(self) -> list[str]:
        """The files and their yank state now and after, then the folders re-indexed."""
        out = [f"{self.verb} {self.version} in {self.store.url}: {len(self.files)} file(s)"]
        out += [f.line() for f in self.files]
        for channel, folders in self.folders().items():
            out.append(f"  pages of {channel}: {', '.join(folders)}")
        return out


@dataclass(frozen=True, kw_only=True)
class YankOutcome:
    """A yank plan and, once applied, what applying it did: yank records changed and folders
    whose pages were written (in the main store and the mirrors)."""

    plan: YankPlan
    changed: int | None = None  # None: a dry run (nothing was written)
    written: int = 0

    @property
    def executed(self) -> bool:
        return self.changed is not None

    @property
    def in_place(self) -> bool:
        """Nothing had to change: a rerun of a finished yank."""
        return self.changed == 0 and self.written == 0

    def summary(self) -> str:
        line = (
            f"{self.plan.verb} {self.plan.version}: {self.changed or 0} file(s) changed, "
            f"{self.written} folder(s) re-indexed"
        )
        return in_place(line, self.in_place)

    def lines(self) -> list[str]:
        """What the run did (nothing on a dry run: the plan's lines say what it would do)."""
        return [self.summary()] if self.executed else []

    def summary_markdown(self) -> str:
        """The summary line, then each file whose yank changed."""
        changes = [
            f"- {c.channel}: `{c.key}` → "
            + (f"yanked: {c.after}" if c.after is not None else "not yanked")
            for c in self.plan.changes
        ]
        return summary_with_list(self.summary(), changes)

    def to_json(self) -> dict[str, Any]:
        plan = self.plan
        done = None
        if self.changed is not None:
            done = {
                "files_changed": self.changed,
                "folders_written": self.written,
                "already_in_place": self.in_place,
            }
        return versioned(
            {
                "command": plan.verb,
                "version": plan.version,
                "store": plan.store.url,
                "mirrors": [m.url for m in plan.mirrors],
                "files": [f.to_json() for f in plan.files],
                "folders": plan.folders(),
                "executed": done is not None,
                "done": done,
            },
            SCHEMA_VERSION,
        )


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        raise UsageError(f"{version!r} is not a version", key="--version") from None


@dataclass(frozen=True, kw_only=True)
class YankRequest:
    """What `relforge yank` asks for: the files of `version` of `matrix` marked yanked with
    `reason` (`undo`: unmarked), only those of `cells` and `channels` when given (default:
    every cell, every channel)."""

    matrix: Matrix
    version: str
    reason: str
    undo: bool = False
    cells: Sequence[str] = ()
    channels: Sequence[ChannelName] = ()
    workers: int = 16


def plan_yank(request: YankRequest, lease: LeaseScope | None = None) -> YankPlan:
    """The files of `version` each selected channel's manifests vouch for and the store holds,
    with their yank state now and after the change.  `lease`: the leases of the selected
    channels are taken there before the store is read."""
    matrix, version, reason, undo = request.matrix, request.version, request.reason, request.undo
    cells, channels, workers = request.cells, request.channels, request.workers
    public = _public(version)
    publishing = open_publishing(matrix)
    store = publishing.store
    chosen = tuple(channels) or CHANNELS
    if lease is not None:
        lease.take(store, chosen)
    files: list[YankChange] = []
    views: dict[ChannelName, ChannelView] = {}
    seen_cells: set[str] = set()
    for channel in chosen:
        view = channel_view(publishing.channel(channel), workers=workers)
        vouched = view.vouchers.lookup([public])
        yanked = read_yanked(store, channel)
        for key, vouch in sorted(vouched.items()):
            seen_cells.add(vouch.cell)
            if cells and vouch.cell not in cells:
                continue
            if store.head(key) is None:
                continue  # vouched for but not (or no longer) in the channel
            files.append(
                YankChange(
                    channel=channel,
                    key=key,
                    cell=vouch.cell,
                    before=yanked.get(key),
                    after=None if undo else reason,
                )
            )
            views[channel] = view
    unknown = sorted(set(cells) - seen_cells)
    if unknown:
        raise UsageError(
            f"no channel holds files of {version} for cell(s) {', '.join(unknown)}",
            key="--cell",
            hint="the cell ids are the manifest's; see `relforge matrix list`",
        )
    if not files:
        raise NothingToDoError(
            f"no file of {matrix.project.name} {version} is in the "
            f"{', '.join(chosen)} channel(s) of {store.url}",
            key="--version",
        )
    return YankPlan(
        version=version,
        undo=undo,
        store=store,
        mirrors=tuple(m.store for m in publishing.mirrors),
        files=tuple(files),
        views=views,
    )


def apply_yank(plan: YankPlan, *, execute: bool = True, workers: int = 16) -> YankOutcome:
    """Write the changed yank records, then rebuild the touched folders' pages (also when the
    records were already right: an interrupted run finishes).  Without `execute`, nothing is
    written: the dry run's outcome."""
    if not execute:
        return YankOutcome(plan=plan)
    changes = plan.changes
    for channel in {c.channel for c in changes}:
        record = read_yanked(plan.store, channel)
        for c in changes:
            if c.channel != channel:
                continue
            if c.after is None:
                record.pop(c.key, None)
            else:
                record[c.key] = c.after
        write_yanked(plan.store, channel, record)
    written = 0
    for channel, folders in plan.folders().items():
        view = plan.views[channel].fresh()  # the yank record read again: it was just written
        for store in (plan.store, *plan.mirrors):  # pages everywhere from the main record
            written += len(reindex(store, folders, view, workers=workers)[0])
    return YankOutcome(plan=plan, changed=len(changes), written=written)
