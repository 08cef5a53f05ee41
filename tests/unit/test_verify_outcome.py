"""`relforge verify`'s outcome gives the command everything it prints: versioned JSON, the lines
(findings in aligned columns), the step summary's markdown."""

from __future__ import annotations

from relforge.promote.integrity.findings import IntegrityFinding, IntegrityReport, StoreReport
from relforge.promote.integrity.repair import RepairPlan, Unrepairable
from relforge.promote.integrity.verifyoutcome import VerifyOutcome

DRIFTED = IntegrityFinding(
    kind="drifted",
    store="main",
    key="whl/cpu/demo-1.0.0+cpu-py3-none-any.whl",
    message="sha256 0000 is not the manifest's 1111",
)
EXTRA = IntegrityFinding(
    kind="extra", store="mirror-2", key="whl/x.whl", message="no manifest vouches for it"
)


def _report(*findings: IntegrityFinding) -> IntegrityReport:
    store = StoreReport(
        name="main", url="file:///s", findings=findings, objects_checked=4, pages_checked=2
    )
    return IntegrityReport(channel="test", stores=(store,))


def test_lines_name_the_store_and_align_the_findings() -> None:
    lines = VerifyOutcome(before=_report(DRIFTED, EXTRA)).lines()
    assert lines[0] == (
        "verify test channel in main (file:///s): 4 object(s) hashed, 2 folder(s) of pages read, "
        "2 finding(s)"
    )
    header, first, second = lines[1:]
    # each column starts where its header does; the detail is never cut or wrapped
    for column in ("store", "key", "detail"):
        at = header.index(column)
        assert first[at - 2 : at] == "  " and first[at] != " "
        assert second[at - 2 : at] == "  " and second[at] != " "
    assert first.endswith(DRIFTED.message) and second.endswith(EXTRA.message)
    assert first.startswith("drifted  main      whl/cpu/demo")


def test_a_clean_channel_has_no_table() -> None:
    assert len(VerifyOutcome(before=_report()).lines()) == 1


def test_a_repair_is_listed_and_the_channel_verified_again() -> None:
    plan = RepairPlan(actions=(), unrepairable=(Unrepairable(finding=EXTRA, reason="no source"),))
    outcome = VerifyOutcome(before=_report(EXTRA), repair=plan, executed=0, after=_report())
    lines = outcome.lines()
    assert "repair: 0 action(s), 1 unrepairable" in lines
    assert "  UNREPAIRABLE [mirror-2] whl/x.whl: no source" in lines
    assert lines[-2] == "applied 0 repair action(s); verifying again"
    assert lines[-1].startswith("after repair test channel in main") and lines[-1].endswith(
        ", 0 finding(s)"
    )
    assert outcome.summary_markdown() == (
        "1 finding(s) in the test channel; 0 repair action(s) applied, 0 left"
    )
    data = outcome.to_json()
    assert next(iter(data)) == "schema_version" and data["schema_version"] == 1
    assert data["repair"]["executed"] is True and data["after"]["clean"] is True
