"""The concrete plans, outcomes and findings satisfy the protocols of relforge.protocols: mypy
checks these functions (a kind that lost `to_json` or `command` fails `make lint`), and the tests
call them so a reader sees one of each."""

from __future__ import annotations

from typing import Any

from relforge.bot.flow import PickPlan
from relforge.builders import BuildPlan
from relforge.matrix.lint import LintFinding
from relforge.promote.index.indexreport import IndexReport
from relforge.promote.integrity.findings import IntegrityFinding
from relforge.promote.plans.storeplan import StorePlan
from relforge.promote.plans.yank import YankOutcome
from relforge.protocols import Finding, Outcome, Plan
from relforge.release.audit import AuditFinding
from relforge.release.releaseplan import ReleasePlan
from relforge.upstream.model import UpstreamFinding
from relforge.upstream.updateoutcome import UpdateOutcome


def plans(a: StorePlan, b: ReleasePlan, c: PickPlan, d: BuildPlan) -> list[Plan]:
    return [a, b, c, d]


def outcomes(a: IndexReport, b: YankOutcome, c: UpdateOutcome) -> list[Outcome]:
    return [a, b, c]


def findings(
    a: LintFinding, b: IntegrityFinding, c: AuditFinding, d: UpstreamFinding
) -> list[Finding]:
    return [a, b, c, d]


def test_every_kind_has_what_its_protocol_names() -> None:
    # the functions above are mypy's check; this is the same check when the tests run
    finding_kinds: list[type] = [LintFinding, IntegrityFinding, AuditFinding, UpstreamFinding]
    for kind in finding_kinds:
        assert callable(getattr(kind, "to_json", None)), kind
    outcome_kinds: list[type] = [IndexReport, YankOutcome, UpdateOutcome]
    for kind in outcome_kinds:
        assert {"lines", "summary_markdown", "to_json"} <= set(dir(kind)), kind
    plan_kinds: list[Any] = [StorePlan, ReleasePlan, PickPlan, BuildPlan]
    for kind in plan_kinds:
        assert "command" in kind.__dataclass_fields__, kind
