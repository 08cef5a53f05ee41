"""`relforge yank`: mark a version's files yanked (PEP 592) on every channel that holds them.

The yank lives in each channel's yank record (relforge.promote.yanked), never only in a page:
the index reads the record whenever it builds a page, so re-indexing, publish and promote keep
it.  Applying the plan writes the records, then rebuilds the touched folders' pages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from relforge.errors import NothingToDoError, UsageError
from relforge.matrix.schema import ChannelName, Matrix
from relforge.promote.context import open_publishing
from relforge.promote.index.folder import apply_folder, plan_folder, refuse_drift
from relforge.promote.index.rootpages import refresh_root
from relforge.promote.vouch import Vouchers, channel_vouchers
from relforge.promote.yanked import read_yanked, write_yanked
from relforge.stores.store import ObjectStore

CHANNELS: tuple[ChannelName, ...] = ("test", "release", "nightly")


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


@dataclass(frozen=True, kw_only=True)
class YankPlan:
    version: str
    undo: bool
    store: ObjectStore
    mirrors: tuple[ObjectStore, ...]  # re-indexed like the main store (its record rules them)
    files: tuple[YankChange, ...]
    vouchers: dict[ChannelName, Vouchers]

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


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        raise UsageError(f"{version!r} is not a version", key="--version") from None


def plan_yank(
    matrix: Matrix,
    version: str,
    *,
    reason: str,
    undo: bool = False,
    cells: Sequence[str] = (),
    channels: Sequence[ChannelName] = (),
    workers: int = 16,
) -> YankPlan:
    """The files of `version` each selected channel's manifests vouch for and the store holds,
    with their yank state now and after the change."""
    public = _public(version)
    publishing = open_publishing(matrix)
    store = publishing.store
    chosen = tuple(channels) or CHANNELS
    files: list[YankChange] = []
    vouchers: dict[ChannelName, Vouchers] = {}
    seen_cells: set[str] = set()
    for channel in chosen:
        v = channel_vouchers(publishing.channel(channel), workers=workers)
        vouched = v.lookup([public])
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
            vouchers[channel] = v
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
        vouchers=vouchers,
    )


def render_yank(plan: YankPlan, echo: Callable[[str], None]) -> None:
    verb = "unyank" if plan.undo else "yank"
    echo(f"{verb} {plan.version} in {plan.store.url}: {len(plan.files)} file(s)")
    for f in plan.files:
        if not f.changed:
            state = "already yanked" if f.after is not None else "not yanked"
            echo(f"  = {f.channel}: {f.key} ({state})")
        elif f.after is None:
            echo(f"  - {f.channel}: {f.key} (yanked: {f.before!r}) → not yanked")
        else:
            was = f" (was {f.before!r})" if f.before is not None else ""
            echo(f"  + {f.channel}: {f.key} → yanked: {f.after!r}{was}")
    for channel, folders in plan.folders().items():
        echo(f"  pages of {channel}: {', '.join(folders)}")


def apply_yank(plan: YankPlan, *, workers: int = 16) -> tuple[int, int]:
    """Write the changed yank records, then rebuild the touched folders' pages (also when the
    records were already right: an interrupted run finishes).  Returns (files changed, folders
    written)."""
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
        v = channel_vouchers_fresh(plan, channel)
        for store in (plan.store, *plan.mirrors):  # pages everywhere from the main record
            plans = [plan_folder(store, f, v, workers=workers) for f in folders]
            refuse_drift(plans, store)
            for p in plans:
                if p.changed:
                    apply_folder(store, p, workers=workers)
                    written += 1
            refresh_root(store, v.root, workers=workers)
    return len(changes), written


def channel_vouchers_fresh(plan: YankPlan, channel: ChannelName) -> Vouchers:
    """The channel's vouchers with the yank record read again (it was just written)."""
    old = plan.vouchers[channel]
    fresh = old.fresh()
    fresh.completeness = old.completeness  # whole releases only, as judged for the plan
    return fresh
