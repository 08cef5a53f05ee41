"""`relforge verify`: a channel's objects and pages against its stored manifests, in the main
store and the mirrors; `--repair` plans restoring from verified sources, `--execute` applies."""

from __future__ import annotations

import click

from relforge.actions import step_summary
from relforge.cli.options import (
    channel_option,
    dry_run_note,
    execute_option,
    format_option,
    workers_option,
)
from relforge.errors import UsageError, ValidationFailed
from relforge.matrix import ChannelName, load_matrix


@click.command()
@click.argument("file", metavar="FILE")
@channel_option(
    "Channel to verify (default: the matrix's channels.default).", ("nightly", "test", "release")
)
@click.option(
    "--store",
    "store_name",
    help="Verify only this store: `main` (publishing.store) or a mirror's name "
    "(default: the main store and every mirror).",
)
@format_option("table", "json")
@click.option("--repair", is_flag=True, help="Plan restoring each finding from a verified source.")
@execute_option("Apply the repair (the default is a dry run).")
@click.option(
    "--trust-service-checksums",
    is_flag=True,
    help="Take an S3 object's sha256 from the ChecksumSHA256 the service computed (one HEAD) "
    "instead of downloading it; only for services that verify checksums, like AWS S3.",
)
@workers_option(help="Parallel reads.")
def verify(
    file: str,
    channel: ChannelName | None,
    store_name: str | None,
    fmt: str,
    repair: bool,
    execute: bool,
    trust_service_checksums: bool,
    workers: int,
) -> None:
    """Compare a channel with its stored manifests and index pages: missing, extra, drifted
    (bytes hashed), sidecar mismatch, page ≠ objects, mirror parity.  Exit 4 on any finding.
    FILE is the matrix file."""
    from relforge.promote import check_channel

    if execute and not repair:
        raise UsageError("--execute applies a repair", key="--execute", hint="add --repair")
    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    outcome = check_channel(
        matrix,
        chosen,
        store_name,
        repair=repair,
        execute=execute,
        workers=workers,
        trust_service=trust_service_checksums,
    )
    if fmt == "json":
        from relforge.output import print_json

        print_json(outcome.to_json())
    else:
        _print_table(outcome)
    left = outcome.final.findings
    summary = f"{len(outcome.before.findings)} finding(s) in the {chosen} channel"
    if outcome.after is not None:
        summary += f"; {outcome.executed} repair action(s) applied, {len(left)} left"
    step_summary("relforge verify", summary)
    if left:
        raise ValidationFailed(
            f"{len(left)} finding(s) in the {chosen} channel"
            + (f"; {len(outcome.repair.unrepairable)} unrepairable" if outcome.repair else ""),
            hint=None if repair else f"relforge verify {file} --channel {chosen} --repair",
        )


def _print_table(outcome: object) -> None:
    from relforge.output import console
    from relforge.promote import Outcome, render_repair

    assert isinstance(outcome, Outcome)
    out = console()
    for report, title in ((outcome.before, "verify"), (outcome.after, "after repair")):
        if report is None:
            continue
        if title == "after repair":
            click.echo(f"applied {outcome.executed} repair action(s); verifying again")
        for s in report.stores:
            click.echo(
                f"{title} {report.channel} channel in {s.name} ({s.url}): "
                f"{s.objects_checked} object(s) hashed, {s.pages_checked} folder(s) of pages "
                f"read, {len(s.findings)} finding(s)"
            )
        if report.findings:
            from rich.markup import escape
            from rich.table import Table

            table = Table("kind", "store", "key", "detail", box=None, pad_edge=False)
            for f in report.findings:
                table.add_row(f.kind, f.store, escape(f.key), escape(f.message))
            out.print(table)
        if title == "verify" and outcome.repair is not None:
            render_repair(outcome.repair, click.echo)
            if outcome.after is None:
                click.echo(dry_run_note() if outcome.repair.actions else "nothing to repair")
