"""The channel-writing half of `relforge deps mirror`: the dependency wheels the plan fetched
(relforge.deps.mirror) go into their folders create-if-absent, each folder's record says what
was mirrored (so the index vouches for those bytes), and the touched folders and the channel
root are indexed last.  `MirrorReport` says what the run did."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.deps.mirror import MirrorPlan, fetch
from relforge.deps.mirrorrecord import record_key, write_record
from relforge.output import in_place, versioned
from relforge.promote.channelview import channel_view
from relforge.promote.index.channelindex import reindex
from relforge.promote.plans.storeplan import StorePlan
from relforge.promote.plans.storeplan import execute as carry_out
from relforge.promote.publishing import ChannelContext
from relforge.stores.transfer import plan_batch

Echo = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class MirrorReport:
    """What applying a dependency mirror plan did."""

    plan: MirrorPlan
    executed: bool = True  # False: the dry run's outcome (nothing below happened)
    created: int = 0  # objects written: wheels and sidecars
    recorded: tuple[tuple[str, int], ...] = ()  # (record key, files this run recorded there)
    indexed: tuple[str, ...] = ()  # folders whose pages changed
    root: str | None = None  # the channel root's prefix, when its pages changed

    def summary(self) -> str:
        plan = self.plan
        line = (
            f"deps mirror {plan.channel}: {len(plan.wanted)} dependency wheel(s) in "
            f"{len(plan.folders)} folder(s), {self.created} object(s) written"
        )
        return in_place(line, not (self.created or self.recorded or self.indexed or self.root))

    def details(self) -> list[str]:
        out = [f"recorded {count} file(s) in {key}" for key, count in self.recorded]
        out += [f"indexed {folder}/" for folder in self.indexed]
        if self.root is not None:
            out.append(f"indexed the channel root {self.root}/")
        return out

    def lines(self) -> list[str]:
        return [*self.details(), self.summary()]

    def summary_markdown(self) -> str:
        return "\n\n".join([self.summary(), *(f"- {line}" for line in self.details())])

    def to_json(self) -> dict[str, Any]:
        """The plan, and (`executed`) what the run wrote, recorded and indexed."""
        if not self.executed:
            return versioned({**self.plan.to_json(), "executed": False})
        return versioned(
            {
                **self.plan.to_json(),
                "executed": True,
                "created": self.created,
                "recorded": [{"record": key, "files": count} for key, count in self.recorded],
                "indexed": list(self.indexed),
                "root_indexed": self.root,
            }
        )


def apply_mirror(
    plan: MirrorPlan, here: ChannelContext, echo: Echo, *, execute: bool = True, workers: int = 16
) -> MirrorReport:
    """Fetch, write, record, re-index, in the store the plan was made against (the main store
    of `here`).  Without `execute`, nothing is fetched or written: the dry run's outcome."""
    if not execute:
        return MirrorReport(plan=plan, executed=False)
    store = plan.store
    with tempfile.TemporaryDirectory(prefix="relforge-mirror-") as tmp:
        fetched = fetch(plan, Path(tmp))
        batch = plan_batch(store, list(fetched.transfers), label="dependencies", workers=workers)
        outcome = carry_out(
            StorePlan(
                command="deps-mirror",
                title=f"mirror dependencies into {plan.channel}",
                batches=(batch,),
                store=store,
            ),
            echo,
            workers=workers,
        )
    recorded = [
        (record_key(folder), len(files))
        for folder, files in fetched.records.items()
        if write_record(store, plan.channel, folder, files)
    ]
    # the records just written vouch for the mirrored files; drift is never advertised
    view = channel_view(here, store=store, workers=workers)
    indexed, root = reindex(store, plan.folders, view, workers=workers)
    return MirrorReport(
        plan=plan,
        created=outcome.created,
        recorded=tuple(recorded),
        indexed=tuple(indexed),
        root=root.spec.prefix if root is not None and root.stale else None,
    )
