"""What `relforge verify` found and did, in the three shapes a command gives it: versioned JSON
for machines, the lines people read, and the markdown of the job's step summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relforge.output import columns, versioned
from relforge.promote.integrity.findings import IntegrityFinding, IntegrityReport
from relforge.promote.integrity.repair import RepairPlan, render_repair

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class VerifyOutcome:
    """The channel as verified (`before`), the repair planned for it, and, when the repair was
    applied, how many actions ran and the channel verified again (`after`)."""

    before: IntegrityReport
    repair: RepairPlan | None = None
    executed: int = 0
    after: IntegrityReport | None = None

    @property
    def final(self) -> IntegrityReport:
        return self.after or self.before

    def to_json(self) -> dict[str, Any]:
        data = self.before.to_json()
        if self.repair is not None:
            data["repair"] = {**self.repair.to_json(), "executed": self.after is not None}
        if self.after is not None:
            data["after"] = self.after.to_json()
        return versioned(data, SCHEMA_VERSION)

    def lines(self) -> list[str]:
        """What each store was checked for, the findings as a table, the repair planned and,
        after a repair, the same for the channel verified again."""
        out: list[str] = []
        for report, title in ((self.before, "verify"), (self.after, "after repair")):
            if report is None:
                continue
            if title == "after repair":
                out.append(f"applied {self.executed} repair action(s); verifying again")
            for s in report.stores:
                out.append(
                    f"{title} {report.channel} channel in {s.name} ({s.url}): "
                    f"{s.objects_checked} object(s) hashed, {s.pages_checked} folder(s) of pages "
                    f"read, {len(s.findings)} finding(s)"
                )
            out += findings_table(report.findings)
            if title == "verify" and self.repair is not None:
                render_repair(self.repair, out.append)
        return out

    def summary_markdown(self) -> str:
        """The step summary's body: how many findings, and what a repair did."""
        text = f"{len(self.before.findings)} finding(s) in the {self.before.channel} channel"
        if self.after is not None:
            text += f"; {self.executed} repair action(s) applied, {len(self.after.findings)} left"
        return text


def findings_table(findings: Sequence[IntegrityFinding]) -> list[str]:
    """Findings in aligned columns (kind, store, key, detail); nothing when there are none."""
    if not findings:
        return []
    rows = [("kind", "store", "key", "detail")]
    return columns(rows + [(f.kind, f.store, f.key, f.message) for f in findings])
