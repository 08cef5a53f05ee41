"""What `relforge index` plans and did, in the shapes a command gives it: the lines people read
(the plan before anything is written, what the run did after), versioned JSON for machines and
the markdown of the job's step summary."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from relforge.output import versioned
from relforge.promote.completeness import CompletenessReport, whole_releases_report
from relforge.promote.index.channelindex import ChannelIndex, IndexOutcome
from relforge.promote.index.folder import FolderPlan
from relforge.stores.retry import total_retries

SCHEMA_VERSION = 1


def describe_index(plans: Sequence[FolderPlan]) -> list[str]:
    """A line per folder: up to date, or what is rebuilt, dropped and left unadvertised."""
    out: list[str] = []
    for p in plans:
        if not p.changed:
            out.append(f"  {p.folder}/: up to date ({len(p.projects)} projects)")
        else:
            parts = []
            if p.rebuild:
                parts.append(
                    "rebuild " + ", ".join(p.rebuild) + f" ({p.verified} file(s) checked "
                    f"against their manifest, {p.carried} carried from the committed page)"
                )
            if p.remove:
                parts.append("drop pages of " + ", ".join(p.remove))
            if not parts:
                parts.append("folder page and page-set marker")
            out.append(f"  {p.folder}/: " + "; ".join(parts) + f" ({len(p.unchanged)} unchanged)")
        if p.raced:
            out.append(
                f"  {p.folder}/: another run wrote the page(s) of {', '.join(p.raced)} over the "
                "committed ones: rebuilt from the stored manifests"
            )
        if p.unvouched:
            shown = ", ".join(k.rsplit("/", 1)[1] for k in p.unvouched[:5])
            more = f" and {len(p.unvouched) - 5} more" if len(p.unvouched) > 5 else ""
            out.append(
                f"  {p.folder}/: {len(p.unvouched)} file(s) no stored manifest vouches for are "
                f"not advertised: {shown}{more}"
            )
    return out


def recorded_lines(recorded: Sequence[tuple[str, bool]]) -> list[str]:
    """The advertised-version records a run wrote, each whole or (with --partial) not."""
    return [f"recorded: {key} ({'whole' if whole else 'PARTIAL'})" for key, whole in recorded]


@dataclass(frozen=True, kw_only=True)
class IndexReport:
    """The planned index of a channel and, once applied, what the run did (`done`)."""

    planned: ChannelIndex
    whole: CompletenessReport  # which versions the pages advertise, and which they leave off
    done: IndexOutcome | None = None

    def plan_lines(self) -> list[str]:
        """What the run will write, delete and leave off the pages, and the channel-root pages
        it will rebuild after the folders."""
        planned = self.planned
        out = [
            f"index of the {planned.channel} channel in {planned.store.url}: "
            f"{len(planned.plans)} folder(s)",
            *describe_index(planned.plans),
            *self.whole.lines(),
        ]
        if planned.deletes:
            out.append(
                f"prune ({len(planned.deletes)} objects) in {planned.store.url}, after the pages:"
            )
            out += [f"  delete    {key}" for key in planned.deletes]
        root = planned.view.root
        if root is not None:
            what = "rebuilt" if root.enabled else "removed (root_index is false)"
            out.append(f"  {root.prefix}/: channel-root pages {what} after the folders")
        return out

    @property
    def executed(self) -> bool:
        return self.done is not None

    def applied(self, done: IndexOutcome) -> IndexReport:
        return dataclasses.replace(self, done=done)

    def retries_counted(self, stores: Iterable[object]) -> IndexReport:
        """The report with the retries `stores` made until now (after the run released its
        lease, whose requests are retried like any other)."""
        if self.done is None:
            return self
        return dataclasses.replace(
            self, done=dataclasses.replace(self.done, retries=total_retries(stores))
        )

    def summary(self) -> str:
        """One line: folders written and up to date, objects pruned, requests retried."""
        assert self.done is not None
        changed = len(self.planned.changed)
        pruned = f", {self.done.deleted} object(s) pruned" if self.done.deleted else ""
        return (
            f"{changed} folder(s) written, {len(self.planned.plans) - changed} up to date"
            f"{pruned}; retries: {self.done.retries}"
        )

    def lines(self) -> list[str]:
        """What the run did: the root pages, the records written, then the summary line."""
        assert self.done is not None
        root = [self.done.root] if self.done.root is not None else []
        return [*root, *recorded_lines(self.done.recorded), self.summary()]

    def summary_markdown(self) -> str:
        assert self.done is not None
        return "\n\n".join(
            [self.summary(), *self.whole.lines(), *recorded_lines(self.done.recorded)]
        )

    def to_json(self) -> dict[str, Any]:
        planned = self.planned
        return versioned(
            {
                "channel": planned.channel,
                "store": planned.store.url,
                "executed": self.executed,
                "folders": len(planned.plans),
                "folders_changed": len(planned.changed),
                "pruned": list(planned.deletes),
                "whole_releases": self.whole.to_json(),
                "recorded": [key for key, _ in self.done.recorded] if self.done else [],
            },
            SCHEMA_VERSION,
        )


def index_report(planned: ChannelIndex) -> IndexReport:
    """The report of a planned index, before it is applied."""
    return IndexReport(planned=planned, whole=whole_releases_report(planned.view.completeness))
