"""A mutating plan (publish, promote, PyPI staging): transfers into stores, deletions, then the
indexes of the folders it touched — printed first, applied only on request, journaled.

A plan that re-indexes carries its `IndexStep`: the folders and the channel view (vouchers and
completeness judgement) their pages are built from, decided when the plan is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from relforge.matrix.schema import ChannelName
from relforge.promote.channelview import ChannelView
from relforge.promote.index.folder import FolderPlan, apply_folder, plan_folder, refuse_drift
from relforge.promote.index.settle import settle_root
from relforge.stores.journal import Journal
from relforge.stores.objectstore import ObjectStore
from relforge.stores.transfer import Batch, Step, apply_batch, plan_digest, refuse_conflicts

Echo = Callable[[str], None]


@dataclass(frozen=True)
class IndexStep:
    """The pages a plan rebuilds once its objects are written: those of `folders` (in the main
    store and every mirror) and the channel root, from `view` (the main store's manifests)."""

    folders: tuple[str, ...]
    view: ChannelView


def index_step(folders: Iterable[str], view: ChannelView) -> IndexStep | None:
    """The index step of `folders` (sorted, once each); None when there is no folder to index."""
    chosen = tuple(sorted(set(folders)))
    return IndexStep(chosen, view) if chosen else None


@dataclass(frozen=True, kw_only=True)
class StorePlan:
    command: str
    title: str
    batches: tuple[Batch, ...]
    store: ObjectStore  # where deletions happen and the indexes live
    deletes: tuple[str, ...] = ()
    index: IndexStep | None = None  # None: the plan rebuilds no page
    notes: tuple[str, ...] = field(default=())
    mirrors: tuple[ObjectStore, ...] = ()  # get the same deletions and indexes as `store`
    install_urls: tuple[str, ...] = ()  # the index URLs that serve what publish uploads
    channel: ChannelName | None = None  # publish: the channel written to (the manifest's)

    @property
    def index_folders(self) -> tuple[str, ...]:
        """The folders the plan re-indexes (none without an index step)."""
        return self.index.folders if self.index is not None else ()

    @property
    def pending(self) -> int:
        return sum(len(b.to_create) for b in self.batches) + len(self.deletes)

    def digest(self) -> str:
        return plan_digest(
            self.command,
            self.batches,
            [*self.deletes, *self.index_folders, self.store.url, *(m.url for m in self.mirrors)],
        )


def render(plan: StorePlan, echo: Echo) -> None:
    echo(plan.title)
    for note in plan.notes:
        echo(f"  {note}")
    for batch in plan.batches:
        if not batch.steps:
            continue
        counts = {
            s: sum(1 for x in batch.steps if x.state == s)
            for s in ("create", "identical", "conflict")
        }
        echo(
            f"{batch.label or 'objects'} → {batch.store.url}: {counts['create']} to write, "
            f"{counts['identical']} already there (same sha256), {counts['conflict']} conflicting"
        )
        for step in batch.steps:
            echo("  " + _step_line(step, batch))
    if plan.index is not None:
        echo(f"then re-index {len(plan.index.folders)} folder(s) in {plan.store.url}:")
        for folder in plan.index.folders:
            echo(f"  index     {folder}/")
        root = plan.index.view.root
        if root is not None:
            what = "index" if root.enabled else "remove"
            echo(f"  {what:<9} {root.prefix}/ (channel-root pages over every variant folder)")
    if plan.deletes:
        after = "once no page lists them" if plan.index is not None else "(pages not rebuilt)"
        echo(f"prune ({len(plan.deletes)} objects) in {plan.store.url}, {after}:")
        for key in plan.deletes:
            echo(f"  delete    {key}")
    for mirror in plan.mirrors:
        echo(f"mirror {mirror.url}: the same prune and re-index")


def _step_line(step: Step, batch: Batch) -> str:
    t = step.transfer
    verb = {
        "create": "copy" if t.source_key else "upload",
        "identical": "skip",
        "conflict": "REFUSE",
    }[step.state]
    src = f" ← {t.source_key}" if t.source_key and t.source_key != t.key else ""
    extra = f" (found {step.found[:12]}…)" if step.state == "conflict" and step.found else ""
    return f"{verb:<9} {t.key}{src}  sha256={t.sha256[:12]}… {t.size} B  [{t.what}]{extra}"


@dataclass(frozen=True, kw_only=True)
class StoreOutcome:
    created: int
    deleted: int
    indexed: tuple[FolderPlan, ...]
    resumed_from: int
    recorded: tuple[tuple[str, bool], ...] = ()  # advertised records written: (key, whole)


def execute(plan: StorePlan, echo: Echo, *, workers: int = 32) -> StoreOutcome:
    """Apply the plan: refuse on any conflict first; then transfers, the pages (without the
    files being pruned), and the deletions last."""
    refuse_conflicts(plan.batches)
    journal = Journal(plan.command, plan.digest())
    resumed_from = len(journal.done) if journal.resumed else 0
    if resumed_from:
        echo(f"resuming {journal.path}: {resumed_from} action(s) done by an interrupted run")
    journal.open({"command": plan.command, "title": plan.title})
    try:
        created = 0
        for batch in plan.batches:
            created += apply_batch(batch, journal, workers=workers)
        indexed: list[FolderPlan] = []
        recorded: list[tuple[str, bool]] = []
        pruned = frozenset(plan.deletes)
        for store in (plan.store, *plan.mirrors):
            where = "" if store is plan.store else f" in {store.url}"
            if plan.index is not None:
                done, records = _reindex(plan, plan.index, store, journal, echo, workers, pruned)
                if store is plan.store:
                    indexed, recorded = done, records
            for key in plan.deletes:
                store.delete(key)
                journal.record(f"delete {key}{where}")
        journal.finish()
    finally:
        journal.close()
    return StoreOutcome(
        created=created,
        deleted=len(plan.deletes),
        indexed=tuple(indexed),
        resumed_from=resumed_from,
        recorded=tuple(recorded),
    )


def _reindex(
    plan: StorePlan,
    step: IndexStep,
    store: ObjectStore,
    journal: Journal,
    echo: Echo,
    workers: int,
    pruned: frozenset[str],
) -> tuple[list[FolderPlan], list[tuple[str, bool]]]:
    """The index step in one store (the main store or a mirror): the folders whose pages
    changed, and (in the main store) the advertised records written."""
    where = "" if store is plan.store else f" in {store.url}"
    # every store's pages come from the main store's manifests, checked against that store's
    # own bytes; the pruned files are left off them, and deleted only once no page lists them
    # (never a link to a deleted file)
    folder_plans = [
        plan_folder(store, folder, step.view, workers=workers, absent=pruned)
        for folder in step.folders
    ]
    refuse_drift(folder_plans, store)
    recorded: list[tuple[str, bool]] = []
    if store is plan.store:
        # intent before effect: a version is recorded as advertised before any page lists
        # it, so a run killed between the pages is finished by the next one (which keeps
        # advertising what this one began to)
        recorded = step.view.completeness.record(plan.mirrors)
    indexed: list[FolderPlan] = []
    for folder_plan in folder_plans:
        if folder_plan.raced:
            echo(
                f"  {folder_plan.folder}/{where}: another run wrote the page(s) of "
                f"{', '.join(folder_plan.raced)} over the committed ones; rebuilt from "
                "the stored manifests"
            )
        if folder_plan.changed:
            apply_folder(store, folder_plan, workers=workers)
            indexed.append(folder_plan)
        journal.record(f"index {folder_plan.folder}{where}", rebuilt=list(folder_plan.rebuild))
    # the channel-root pages, from the variant pages just committed (a folder another run
    # raced is rebuilt on the way: settle.py)
    _, settled = settle_root(store, step.view, workers=workers, absent=pruned)
    return indexed + list(settled), recorded
