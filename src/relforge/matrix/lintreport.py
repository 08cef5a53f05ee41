"""What `relforge matrix lint` found, in the shapes a command gives it: versioned JSON, the lines
people read, the step summary's markdown and, under GitHub Actions, annotations at each
finding's file:line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relforge.actions import annotate
from relforge.matrix.lint import RULES, LintFinding, lint_matrix
from relforge.matrix.schema import Matrix
from relforge.output import columns, versioned

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class LintReport:
    """The findings of the lint rules on some releases of one matrix file; with `strict`,
    warnings fail too."""

    file: str
    findings: tuple[LintFinding, ...]
    strict: bool = False

    @property
    def failing(self) -> list[LintFinding]:
        return [f for f in self.findings if self.strict or f.rule.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        rules = {
            r.id: {"name": r.name, "severity": r.severity, "doc": r.doc} for r in RULES.values()
        }
        data = {"findings": [f.to_json() for f in self.findings], "rules": rules}
        return versioned(data, SCHEMA_VERSION)

    def lines(self) -> list[str]:
        if not self.findings:
            return [f"{self.file}: no findings"]
        rows = [("id", "severity", "release", "where", "message")]
        rows += [
            (f"{f.rule.id} {f.rule.name}", f.rule.severity, f.release, str(f.where), f.message)
            for f in self.findings
        ]
        return [f"{len(self.findings)} findings", *columns(rows)]

    def summary_markdown(self) -> str:
        """The step summary's body: one item per finding (empty when there is none)."""
        return "\n".join(
            f"- **{f.rule.id}** ({f.rule.severity}) {f.release}: {f.message} — `{f.where}`"
            for f in self.findings
        )

    def annotate(self) -> None:
        """Under GitHub Actions, each finding as an annotation of its severity at its place."""
        for f in self.findings:
            annotate(
                f.rule.severity,
                f"{f.release}: {f.message}",
                file=f.where.file,
                line=f.where.line,
                column=f.where.column,
                title=f"{f.rule.id} {f.rule.name}",
            )


def lint_report(
    matrix: Matrix, releases: list[str] | None = None, *, strict: bool = False
) -> LintReport:
    """Every lint rule on `releases` (default: all) of a loaded matrix, as a report."""
    findings = tuple(lint_matrix(matrix, releases))
    return LintReport(file=str(matrix.file), findings=findings, strict=strict)
