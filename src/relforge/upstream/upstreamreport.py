"""How `upstream check` and `upstream update` say what they found: lines for people, a markdown
summary for $GITHUB_STEP_SUMMARY (JSON is `Report.to_json`)."""

from __future__ import annotations

from relforge.upstream.model import UpstreamFinding
from relforge.upstream.releasecheck import UpstreamReport
from relforge.upstream.update import UpdatePlan


def headline(report: UpstreamReport) -> str:
    return (
        f"upstream check: {report.file} release {report.release} against {report.index} "
        f"(policy date {report.policy_date})"
    )


def finding_lines(f: UpstreamFinding) -> list[str]:
    mark = "DUE " if f.due else "info"
    lines = [f"  {mark}  {f.kind:<16} {f.message}"]
    if f.where is not None and f.due:
        lines.append(f"        at {f.where}")
    if f.source is not None:
        lines.append(f"        source: {f.source.describe()}")
    if f.due:
        lines.append(
            f"        by hand: {f.manual}" if f.manual else "        `upstream update` writes it"
        )
    return lines


def check_lines(report: UpstreamReport) -> list[str]:
    lines = [headline(report)]
    for f in report.findings:
        lines += finding_lines(f)
    for c in report.compared:
        variants = ", ".join(c.variants) or "no variant"
        lines.append(
            f"  pins  {c.pins} pin(s) of {variants} compared with {c.file} ({c.via}): "
            f"{c.differing} differ"
        )
    lines.append(summary(report))
    return lines


def summary(report: UpstreamReport) -> str:
    due = report.due
    if not due:
        return f"{report.file} {report.release}: current with {report.index}"
    writes = sum(f.change is not None for f in due)
    return (
        f"{report.file} {report.release}: {len(due)} change(s) due ({writes} written by "
        f"`relforge upstream update`, {len(due) - writes} by hand)"
    )


def markdown(report: UpstreamReport) -> str:
    lines = [f"### relforge upstream check: {report.file} {report.release}", "", summary(report)]
    if report.due:
        lines.append("")
        for f in report.due:
            lines.append(
                f"- **{f.kind}** {f.message}" + (f" (by hand: {f.manual})" if f.manual else "")
            )
    return "\n".join(lines)


def update_lines(plan: UpdatePlan) -> list[str]:
    report = plan.report
    lines = [f"upstream update: {report.file} release {report.release} from {report.index}"]
    for f in plan.written:
        lines.append(f"  write    {f.message}")
        if f.source is not None:
            lines.append(f"           source: {f.source.describe()}")
    for f in plan.manual:
        lines.append(f"  by hand  {f.message}: {f.manual}")
    if not plan.changed:
        lines.append(f"{report.file}: nothing to write")
    return lines
