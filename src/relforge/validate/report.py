"""Validation results and their renderings: a table for people, JSON, JUnit XML, markdown."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

from relforge.actions import Level, annotate, fold, in_actions
from relforge.manifest import ProvenGpu, Verdict
from relforge.output import markdown_cell
from relforge.validate.checklist import CHECKS
from relforge.validate.checkregistry import check_name


@dataclass(frozen=True, kw_only=True)
class ArtifactReport:
    """The verdicts on one subject: a cell (with or without its file) or a file no cell claims."""

    subject: str
    cell_id: str | None
    file: str | None
    verdicts: tuple[Verdict, ...]
    proven: tuple[ProvenGpu, ...] = ()  # GPUs the cell's GPU smoke ran a kernel on

    @property
    def failed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "fail")

    @property
    def warned(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "warn")

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "cell_id": self.cell_id,
            "file": self.file,
            "status": "fail" if self.failed else "pass",
            "verdicts": [{**v.to_json(), "name": check_name(v.check)} for v in self.verdicts],
            "proven_on": [g.to_json() for g in self.proven],
        }


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    project: str
    release: str
    channel: str
    artifacts: tuple[ArtifactReport, ...]

    @property
    def failures(self) -> list[tuple[ArtifactReport, Verdict]]:
        return [(a, v) for a in self.artifacts for v in a.failed]

    def counts(self) -> Counter[str]:
        return Counter(v.status for a in self.artifacts for v in a.verdicts)

    def to_json(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "project": self.project,
            "release": self.release,
            "channel": self.channel,
            "status": "fail" if self.failures else "pass",
            "counts": {k: counts.get(k, 0) for k in ("pass", "fail", "skip", "warn")},
            "artifacts": [a.to_json() for a in self.artifacts],
            "checks": {
                c.id: {"name": c.name, "scope": c.scope, "doc": c.doc} for c in CHECKS.values()
            },
        }

    def to_junit(self) -> str:
        """One test suite per subject, one test case per check (skips and failures marked)."""
        counts = self.counts()
        root = ET.Element(
            "testsuites",
            name=f"relforge validate {self.project} {self.release} {self.channel}",
            tests=str(sum(counts.values())),
            failures=str(counts.get("fail", 0)),
            skipped=str(counts.get("skip", 0)),
        )
        for artifact in self.artifacts:
            statuses = Counter(v.status for v in artifact.verdicts)
            suite = ET.SubElement(
                root,
                "testsuite",
                name=artifact.subject,
                tests=str(len(artifact.verdicts)),
                failures=str(statuses.get("fail", 0)),
                skipped=str(statuses.get("skip", 0)),
            )
            for verdict in artifact.verdicts:
                name = check_name(verdict.check)
                case = ET.SubElement(
                    suite, "testcase", classname=artifact.subject, name=f"{verdict.check} {name}"
                )
                if verdict.status == "fail":
                    ET.SubElement(case, "failure", message=verdict.message).text = verdict.message
                elif verdict.status == "skip":
                    ET.SubElement(case, "skipped", message=verdict.message)
                elif verdict.status == "warn":  # JUnit has no warnings: a passed case says so
                    ET.SubElement(case, "system-out").text = f"warning: {verdict.message}"
                elif verdict.message:
                    ET.SubElement(case, "system-out").text = verdict.message
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")

    def to_markdown(self) -> str:
        counts = self.counts()
        head = "failed" if self.failures else "passed"
        lines = [
            f"### Validation {head}: {self.project} {self.release} ({self.channel})",
            "",
            f"{counts.get('pass', 0)} passed, {counts.get('fail', 0)} failed, "
            f"{counts.get('skip', 0)} skipped{_warned(counts)} on {len(self.artifacts)} "
            "artifacts.",
            "",
            "| Artifact | Result | Failed checks and warnings |",
            "|---|---|---|",
        ]
        for a in self.artifacts:
            failed = (
                "<br>".join(
                    [f"**{v.check}** {markdown_cell(v.message)}" for v in a.failed]
                    + [f"warning: **{v.check}** {markdown_cell(v.message)}" for v in a.warned]
                )
                or "—"
            )
            lines.append(f"| `{a.subject}` | {'❌' if a.failed else '✅'} | {failed} |")
        return "\n".join(lines + self._gpu_markdown())

    def _gpu_markdown(self) -> list[str]:
        """The GPU checks per cell (the GPU, its sm_XY, the prediction and the kernel's
        verdict) when any ran: what a GPU runner's summary is read for."""
        rows = []
        for a in self.artifacts:
            got = {v.check: v for v in a.verdicts if v.check in (GPU_CHECK, GPU_SMOKE_CHECK)}
            if not got or all(v.status == "skip" for v in got.values()):
                continue
            cells = [
                f"{_MARK[got[c].status]} {markdown_cell(got[c].message)}" if c in got else "—"
                for c in (GPU_CHECK, GPU_SMOKE_CHECK)
            ]
            proven = ", ".join(f"{g.name} ({g.sm})" for g in a.proven) or "—"
            rows.append(f"| `{a.subject}` | {cells[0]} | {cells[1]} | {proven} |")
        if not rows:
            return []
        return [
            "",
            "#### GPU",
            "",
            "| Cell | Prediction (RF-R004) | Kernel (RF-R006) | Ran on |",
            "|---|---|---|---|",
            *rows,
        ]

    def fold_details(self) -> None:
        """Under GitHub Actions, every verdict of each artifact (passed checks too) in a fold
        of the job log, one per artifact; nothing elsewhere."""
        if not in_actions():
            return
        for a in self.artifacts:
            lines = [
                f"{v.status:<4}  {v.check} {check_name(v.check)}"
                + (f": {v.message}" if v.message else "")
                for v in a.verdicts
            ]
            result = f"{len(a.failed)} failed" if a.failed else "passed"
            fold(f"{a.subject}: {result} ({len(a.verdicts)} checks)", "\n".join(lines))

    def annotate(self) -> None:
        """Under GitHub Actions, each failed check as an `::error` annotation and each warning
        as a `::warning`, titled with the check's ID and the artifact; nothing elsewhere."""
        for a in self.artifacts:
            for v in (*a.failed, *a.warned):
                name = check_name(v.check)
                level: Level = "error" if v.status == "fail" else "warning"
                annotate(level, v.message, title=f"{v.check} {name} ({a.subject})")

    def print_table(self) -> None:
        from rich.table import Table

        from relforge.output import console

        counts = self.counts()
        table = Table(
            title=f"{self.project} {self.release} ({self.channel}): {counts.get('pass', 0)} "
            f"passed, {counts.get('fail', 0)} failed, {counts.get('skip', 0)} skipped"
            + _warned(counts),
            title_justify="left",
        )
        for column in ("artifact", "file", "result", "failed checks and warnings"):
            table.add_column(column)
        for a in self.artifacts:
            table.add_row(
                a.subject,
                a.file or "—",
                "FAIL" if a.failed else "ok",
                "\n".join(
                    [f"{v.check} {check_name(v.check)}: {v.message}" for v in a.failed]
                    + [f"warning: {v.check} {check_name(v.check)}: {v.message}" for v in a.warned]
                ),
            )
        console().print(table)


GPU_CHECK, GPU_SMOKE_CHECK = "RF-R004", "RF-R006"
_MARK = {"pass": "✅", "fail": "❌", "warn": "⚠️", "skip": "➖"}


def _warned(counts: Counter[str]) -> str:
    return f", {counts['warn']} warned" if counts.get("warn") else ""
