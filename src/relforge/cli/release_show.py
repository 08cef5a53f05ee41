"""Printing release plans, statuses and audits: rich text for people, markdown for CI summaries."""

from __future__ import annotations

from rich.markup import escape
from typing_extensions import assert_never

from relforge.output import console
from relforge.release import AuditReport, NewCommit, NewTag, Plan, SetRef, Status, target_text


def print_plan(plan: Plan, *, execute: bool, results: dict[str, str] | None = None) -> None:
    out = console()
    mode = "applied" if results is not None else ("executing" if execute else "dry run")
    out.print(f"[bold]relforge {escape(plan.command)}[/] on {escape(plan.remote)} — {mode}")
    for line in plan.done:
        out.print(f"  [green]✓[/] {escape(line)}")
    for note in plan.notes:
        out.print(f"  [yellow]![/] {escape(note)}")
    if plan.empty:
        out.print("  nothing to do: everything is in place")
    for step, action in enumerate(plan.actions, start=1):
        match action:
            case NewCommit():
                out.print(
                    f"  {step}. commit for {escape(action.branch)} on {action.parent[:12]}: "
                    f"[bold]{escape(action.subject)}[/]"
                )
                if results is not None or execute:  # the dry run showed the diffs
                    paths = ", ".join(c.path for c in action.changes)
                    out.print(f"       [dim]{escape(paths)}[/]")
                    continue
                for change in action.changes:
                    for row in change.diff().splitlines():
                        style = {"+": "green", "-": "red", "@": "cyan"}.get(row[:1], "")
                        text = escape(row)
                        out.print(f"       [{style}]{text}[/]" if style else f"       {text}")
            case NewTag():
                out.print(
                    f"  {step}. annotated tag [bold]{escape(action.name)}[/] on "
                    f"{action.commit[:12]}: {escape(action.message)}"
                )
            case SetRef():
                old = action.old[:12] if action.old else "(new)"
                new = (results or {}).get(action.ref, "")[:12] or target_text(action.new)
                out.print(
                    f"  {step}. push {escape(action.ref)}: {old} → {escape(new)}  "
                    f"[dim]({escape(action.why)})[/]"
                )
            case _:
                assert_never(action)
    if plan.refs and results is None:
        note = "in one atomic push" if execute else "— pass --execute to apply"
        out.print(f"  {len(plan.refs)} ref(s) to push to {escape(plan.remote)} {note}")
    if plan.next_step:
        out.print(f"  next: {escape(plan.next_step)}")


def plan_markdown(plan: Plan, *, executed: bool) -> str:
    lines = [f"### relforge {plan.command} ({'applied' if executed else 'dry run'})", ""]
    lines += [f"- ✓ {d}" for d in plan.done]
    lines += [f"- {a.why}: `{a.ref}`" for a in plan.refs]
    if plan.empty:
        lines.append("- nothing to do")
    return "\n".join(lines)


def print_status(status: Status) -> None:
    out = console()
    line = status.line
    out.print(f"[bold]release {line}[/] on {escape(status.remote)}")
    out.print(f"  {line.branch}: {status.branch[:12] if status.branch else '[red]missing[/]'}")
    out.print(f"  {line.orig_branch}: {status.orig[:12] if status.orig else 'missing'}")
    if status.cut_point:
        out.print(f"  cut point: {status.cut_point[:12]}")
    if status.version:
        out.print(f"  version.txt on the branch: {status.version}")
    if status.tags:
        out.print("  tags: " + ", ".join(f"{t.name} ({t.commit[:12]})" for t in status.tags))
    else:
        out.print("  tags: none")
    if status.branch:
        out.print(f"  commits since {status.since_label}: {len(status.since)}")
        for commit in status.since[:20]:
            out.print(f"    {commit.sha[:12]} {escape(commit.subject)}")
    out.print(f"  next: {escape(status.next_command)}")


def print_audit(report: AuditReport) -> None:
    out = console()
    m = report.milestone
    out.print(
        f"[bold]audit of {report.line.branch}[/] against milestone {escape(m.title)} "
        f"({len(m.items)} item(s)); {report.examined} commit(s) on the trunk since the cut "
        f"({report.trunk_range})"
    )
    for c in report.covered:
        items = ", ".join(f"#{n}" for n in c.items)
        out.print(f"  [green]✓[/] {c.commit[:12]} {escape(c.subject)} ({items}; by {c.how})")
    for f in report.findings:
        if f.kind == "missing-pick":
            items = ", ".join(f"#{n}" for n in f.items)
            out.print(
                f"  [red]✗ missing pick[/] {f.commit[:12]} {escape(f.subject)} ({items}): "
                f"not on {report.line.branch}"
            )
        else:
            out.print(
                f"  [red]✗ missing revert[/] {f.commit[:12]} {escape(f.subject)}: reverts "
                f"{(f.reverted or '')[:12]}, which {report.line.branch} carries as "
                f"{(f.on_branch or '')[:12]}"
            )
    if report.unreferenced:
        listed = ", ".join(f"#{n}" for n in report.unreferenced)
        out.print(f"  [dim]no trunk commit since the cut mentions {listed}[/]")
    verdict = f"{len(report.findings)} finding(s)" if report.findings else "nothing missing"
    out.print(f"  {verdict}")


def audit_markdown(report: AuditReport) -> str:
    lines = [f"### relforge release audit {report.line}", ""]
    for f in report.findings:
        lines.append(f"- **{f.kind}** `{f.commit[:12]}` {f.subject}")
    if not report.findings:
        lines.append("- nothing missing")
    return "\n".join(lines)
