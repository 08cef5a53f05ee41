"""`relforge verify`: a channel's objects and pages against its stored manifests, in the main
store and the mirrors; `--repair` plans restoring from verified sources, `--execute` applies.
The stage returns a `VerifyOutcome` (JSON, lines, summary): this command only prints it."""

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
from relforge.output import print_json


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
    from relforge.promote import VerifyRequest, check_channel

    if execute and not repair:
        raise UsageError("--execute applies a repair", key="--execute", hint="add --repair")
    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    request = VerifyRequest(
        matrix=matrix,
        channel=chosen,
        store_name=store_name,
        repair=repair,
        execute=execute,
        workers=workers,
        trust_service=trust_service_checksums,
    )
    outcome = check_channel(request)
    if fmt == "json":
        print_json(outcome.to_json())
    else:
        for line in outcome.lines():
            click.echo(line)
        if outcome.repair is not None and outcome.after is None:  # planned, not applied
            click.echo(dry_run_note() if outcome.repair.actions else "nothing to repair")
    step_summary("relforge verify", outcome.summary_markdown())
    left = outcome.final.findings
    if left:
        raise ValidationFailed(
            f"{len(left)} finding(s) in the {chosen} channel"
            + (f"; {len(outcome.repair.unrepairable)} unrepairable" if outcome.repair else ""),
            hint=None if repair else f"relforge verify {file} --channel {chosen} --repair",
        )
