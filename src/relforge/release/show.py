"""Release plans, statuses and audits as people read them (lines in rich markup, which the
command line prints) and as a CI job's step summary reads them (markdown)."""

from __future__ import annotations

from rich.markup import escape
from typing_extensions import assert_never

from relforge.release.audit import AuditReport
from relforge.release.releaseplan import NewCommit, NewTag, ReleasePlan, SetRef, target_text
from relforge.release.status import LineStatus


def plan_lines(
    plan: ReleasePlan, *, execute: bool, results: dict[str, str] | None = None
) -> list[str]:
    """The plan (a dry run, about to be executed, or applied with `results`: ref → new sha)."""
    out: list[str] = []
    mode = "applied" if results is not None else ("executing" if execute else "dry run")
    out.append(f"[bold]relforge {escape(plan.command)}[/] on {escape(plan.remote)} — {mode}")
    for line in plan.done:
        out.append(f"  [green]✓[/] {escape(line)}")
    for note in plan.notes:
        out.append(f"  [yellow]![/] {escape(note)}")
    if plan.empty:
        out.append("  nothing to do: everything is in place")
    for step, action in enumerate(plan.actions, start=1):
        match action:
            case NewCommit():
                out.append(
                    f"  {step}. commit for {escape(action.branch)} on {action.parent[:12]}: "
                    f"[bold]{escape(action.subject)}[/]"
                )
                if results is not None or execute:  # the dry run showed the diffs
                    paths = ", ".join(c.path for c in action.changes)
                    out.append(f"       [dim]{escape(paths)}[/]")
                    continue
                for change in action.changes:
                    for row in change.diff().splitlines():
                        style = {"+": "green", "-": "red", "@": "cyan"}.get(row[:1], "")
                        text = escape(row)
                        out.append(f"       [{style}]{text}[/]" if style else f"       {text}")
            case NewTag():
                out.append(
                    f"  {step}. annotated tag [bold]{escape(action.name)}[/] on "
                    f"{action.commit[:12]}: {escape(action.message)}"
                )
            case SetRef():
                old = action.old[:12] if action.old else "(new)"
                new = (results or {}).get(action.ref, "")[:12] or target_text(action.new)
                out.append(
                    f"  {step}. push {escape(action.ref)}: {old} → {escape(new)}  "
                    f"[dim]({escape(action.why)})[/]"
                )
            case _:
                assert_never(action)
    if plan.refs and results is None:
        note = "in one atomic push" if execute else "— pass --execute to apply"
        out.append(f"  {len(plan.refs)} ref(s) to push to {escape(plan.remote)} {note}")
    if plan.next_step:
        out.append(f"  next: {escape(plan.next_step)}")
    return out


def plan_markdown(plan: ReleasePlan, *, executed: bool) -> str:
    lines = [f"### relforge {plan.command} ({'applied' if executed else 'dry run'})", ""]
    lines += [f"- ✓ {d}" for d in plan.done]
    lines += [f"- {a.why}: `{a.ref}`" for a in plan.refs]
    if plan.empty:
        lines.append("- nothing to do")
    return "\n".join(lines)


def status_lines(status: LineStatus) -> list[str]:
    out: list[str] = []
    line = status.line
    out.append(f"[bold]release {line}[/] on {escape(status.remote)}")
    out.append(f"  {line.branch}: {status.branch[:12] if status.branch else '[red]missing[/]'}")
    out.append(f"  {line.orig_branch}: {status.orig[:12] if status.orig else 'missing'}")
    if status.cut_point:
        out.append(f"  cut point: {status.cut_point[:12]}")
    if status.version:
        out.append(f"  version.txt on the branch: {status.version}")
    if status.tags:
        out.append("  tags: " + ", ".join(f"{t.name} ({t.commit[:12]})" for t in status.tags))
    else:
        out.append("  tags: none")
    if status.branch:
        out.append(f"  commits since {status.since_label}: {len(status.since)}")
        for commit in status.since[:20]:
            out.append(f"    {commit.sha[:12]} {escape(commit.subject)}")
    out.append(f"  next: {escape(status.next_command)}")
    return out


def audit_lines(report: AuditReport) -> list[str]:
    out: list[str] = []
    m = report.milestone
    out.append(
        f"[bold]audit of {report.line.branch}[/] against milestone {escape(m.title)} "
        f"({len(m.items)} item(s)); {report.examined} commit(s) on the trunk since the cut "
        f"({report.trunk_range})"
    )
    for c in report.covered:
        items = ", ".join(f"#{n}" for n in c.items)
        out.append(f"  [green]✓[/] {c.commit[:12]} {escape(c.subject)} ({items}; by {c.how})")
    for f in report.findings:
        if f.kind == "missing-pick":
            items = ", ".join(f"#{n}" for n in f.items)
            out.append(
                f"  [red]✗ missing pick[/] {f.commit[:12]} {escape(f.subject)} ({items}): "
                f"not on {report.line.branch}"
            )
        else:
            out.append(
                f"  [red]✗ missing revert[/] {f.commit[:12]} {escape(f.subject)}: reverts "
                f"{(f.reverted or '')[:12]}, which {report.line.branch} carries as "
                f"{(f.on_branch or '')[:12]}"
            )
    if report.unreferenced:
        listed = ", ".join(f"#{n}" for n in report.unreferenced)
        out.append(f"  [dim]no trunk commit since the cut mentions {listed}[/]")
    verdict = f"{len(report.findings)} finding(s)" if report.findings else "nothing missing"
    out.append(f"  {verdict}")
    return out


def audit_markdown(report: AuditReport) -> str:
    lines = [f"### relforge release audit {report.line}", ""]
    for f in report.findings:
        lines.append(f"- **{f.kind}** `{f.commit[:12]}` {f.subject}")
    if not report.findings:
        lines.append("- nothing missing")
    return "\n".join(lines)
