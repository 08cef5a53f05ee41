"""Each lint rule fires on a matrix made to break it, and the shipped matrices are clean."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.matrix.lint import RULES, lint_matrix, python_eol_dates
from relforge.matrix.lintreport import lint_report
from relforge.matrix.load import load_matrix
from tests.conftest import EXAMPLE, PYTORCH, SMALL, Write

EXTRA_VARIANTS = {
    "RF-L002": """
      cu126:
        kind: cuda
        version: 12.6.3
        platforms: {linux-x86_64: {}}
      cu129:
        kind: cuda
        version: 12.9.1
        platforms: {linux-x86_64: {}}""",
    "RF-L003": """
      cu128-sbsa:
        kind: cuda
        version: 12.8.1
        cudnn: 9.8.0.87
        platforms: {linux-x86_64: {}}""",
    "RF-L007": """
      cpu-again:
        kind: cpu
        platforms: {linux-x86_64: {image: "img:cpu"}}""",
}


def with_variants(text: str) -> str:
    anchor = "    pypi_default:\n      linux-x86_64: cu128"
    assert anchor in SMALL
    return SMALL.replace(anchor, text.lstrip("\n").replace("\n", "\n", -1) + "\n" + anchor, 1)


CASES = {
    "RF-L001": SMALL.replace('python: ["3.11", "3.12", "3.13t"]', 'python: ["3.8", "3.11"]'),
    "RF-L002": with_variants(EXTRA_VARIANTS["RF-L002"]),
    "RF-L003": with_variants(EXTRA_VARIANTS["RF-L003"]),
    "RF-L004": SMALL.replace(
        "    include: []\n", "    include: []\n    pypi_default: {windows-x86_64: cu130}\n"
    ),
    "RF-L005": SMALL.replace(
        "reason: no free-threaded Windows build yet",
        "reason: no free-threaded Windows build yet\n"
        "      - match: {platform: macos-arm64}\n        reason: stale",
    ),
    "RF-L006": SMALL.replace("    date: 2025-12-01\n", ""),
    "RF-L007": with_variants(EXTRA_VARIANTS["RF-L007"]),
    "RF-L008": SMALL.replace(
        "    include: []\n", "    include: []\n    pypi_default: {linux-x86_64: cu130}\n"
    ),
}


AXIS = """    local_label: "+{variant}.np{numpy_major}"
    axes:
      numpy:
        "2.x":
          install: ["numpy==2.*"]
          requires: [REQUIRES]
"""
CASES["RF-L020"] = SMALL.replace(
    '    python: ["3.11", "3.12", "3.13t"]\n',
    '    python: ["3.11", "3.12", "3.13t"]\n'
    + AXIS.replace("\n          requires: [REQUIRES]", ""),
)
CASES["RF-L021"] = SMALL.replace(
    '    python: ["3.11", "3.12", "3.13t"]\n',
    '    python: ["3.11", "3.12", "3.13t"]\n' + AXIS.replace("REQUIRES", '"numpy<2"'),
)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires(write: Callable[[str], Path], rule_id: str) -> None:
    assert CASES[rule_id] != SMALL
    findings = lint_matrix(load_matrix(write(CASES[rule_id])))
    assert rule_id in {f.rule.id for f in findings}, [f.to_json() for f in findings]
    hit = next(f for f in findings if f.rule.id == rule_id)
    assert "matrix.yaml:" in str(hit.where)


def test_every_rule_has_a_case_and_doc() -> None:
    assert set(RULES) == set(CASES)
    assert all(rule.doc and rule.name for rule in RULES.values())


def test_small_matrix_is_clean(write: Callable[[str], Path]) -> None:
    assert lint_matrix(load_matrix(write(SMALL))) == []


def test_shipped_matrices() -> None:
    findings = lint_matrix(load_matrix(PYTORCH))
    # 2.7's cpu-cxx11-abi variant was still generated although every Linux build had moved to
    # the cxx11 ABI: the duplicate the linter exists to point out.
    assert [(f.rule.id, f.release) for f in findings] == [("RF-L007", "2.7")]
    assert lint_matrix(load_matrix(EXAMPLE)) == []


def test_eol_table_is_data() -> None:
    dates = python_eol_dates()
    assert dates["3.9"].year == 2025 and "3.14" in dates


def test_the_report_gives_the_command_its_lines_json_and_summary(write: Write) -> None:
    path = write(CASES["RF-L001"])
    report = lint_report(load_matrix(path), strict=False)
    assert report.findings and not report.failing  # warnings fail only with strict
    assert lint_report(load_matrix(path), strict=True).failing
    header, *rows = report.lines()[1:]
    assert report.lines()[0] == f"{len(report.findings)} findings"
    at = header.index("message")
    for row, finding in zip(rows, report.findings, strict=True):
        assert row.startswith(f"{finding.rule.id} {finding.rule.name}")
        assert row[at:] == finding.message  # the message whole, in its column
    data = report.to_json()
    assert data["schema_version"] == 1 and set(data["rules"]) == set(RULES)
    assert report.summary_markdown().startswith("- **RF-L001** (warning) 1.0:")
    clean = lint_report(load_matrix(write(SMALL, "clean.yaml")))
    assert clean.lines() == [f"{clean.file}: no findings"] and clean.summary_markdown() == ""
