"""What a publish or promote run did, in the shapes a command gives it: the lines people read
(the summary last: scripts read the retries from the last line) and the markdown of the job's
step summary."""

from __future__ import annotations

from dataclasses import dataclass

from relforge.output import in_place
from relforge.promote.completeness import CompletenessReport, whole_releases_report
from relforge.promote.index.indexreport import recorded_lines
from relforge.promote.plans.storeplan import StoreOutcome, StorePlan
from relforge.stores.retry import total_retries


@dataclass(frozen=True, kw_only=True)
class PlanReport:
    """An applied plan (`plan`) and what applying it did (`done`)."""

    plan: StorePlan
    done: StoreOutcome

    def retries(self) -> int:
        """Requests the plan's stores tried again after a transient fault."""
        stores: list[object] = [self.plan.store]
        for batch in self.plan.batches:
            stores += [batch.store, batch.source]
        return total_retries(stores)

    def summary(self) -> str:
        """One line: objects written and deleted, pages rebuilt, requests retried."""
        done = self.done
        rebuilt = sum(len(f.rebuild) for f in done.indexed)
        line = (
            f"{self.plan.title}: {done.created} object(s) written, {done.deleted} deleted, "
            f"{rebuilt} project page(s) rebuilt in {len(done.indexed)} folder(s)"
        )
        line = in_place(line, done.created == 0 and done.deleted == 0 and not done.indexed)
        return line + f"; retries: {self.retries()}"

    def details(self) -> list[str]:
        """What the index left off the pages (or put there with --partial), and the advertised
        versions recorded for the first time."""
        step = self.plan.index
        whole = (
            whole_releases_report(step.view.completeness)
            if step is not None
            else CompletenessReport()
        )
        return whole.lines() + recorded_lines(self.done.recorded)

    def lines(self) -> list[str]:
        return [*self.details(), self.summary()]

    def summary_markdown(self) -> str:
        return "\n\n".join([self.summary(), *self.details()])
