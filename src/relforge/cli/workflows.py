"""`relforge workflows …`: render GitHub Actions workflows from the matrix, or check them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from relforge.cli.output import append_step_summary
from relforge.workflows import RenderRequest, check_dir, render_workflows, write_dir


@click.group()
def workflows() -> None:
    """Render GitHub Actions workflows from the build matrix."""


@workflows.command("generate")
@click.argument("file", metavar="FILE")
@click.option("--release", "-r", required=True, help="Release X.Y whose cells the jobs build.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the workflows, normally .github/workflows.",
)
@click.option(
    "--templates",
    "templates_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory whose templates override relforge's by name (and whose action_pins.yaml "
    "adds pins).",
)
@click.option(
    "--ref",
    help="Call the reusable build workflow at this branch or tag of project.repository "
    "(e.g. main, release/2.9).  Default: the caller's own commit.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: exit 1 with a unified diff when a file is edited, missing or stray.",
)
def generate(
    file: str,
    release: str,
    out_dir: Path,
    templates_dir: Path | None,
    ref: str | None,
    check: bool,
) -> None:
    """Render the workflows of one release of FILE into --out.

    Writes relforge-build.yml (reusable: build, test and upload one cell),
    relforge-<os>-<package type>.yml (every cell, sharded into job matrices of at most 256),
    relforge-bot.yml and relforge-validate-binaries.yml; files relforge generated earlier that
    are no longer part of the set are removed.  Run it from the repository root.

    \b
    Templates (Jinja, sandboxed, strict; <{ value }>, <% statement %>, <# comment #>):
      build.yml.j2              reusable workflow: build, test, upload one cell
      binaries.yml.j2           one per OS and package type (variable `group`)
      bot.yml.j2                the cherry-pick bot
      validate-binaries.yml.j2  install every wheel cell from its index (`channels`)
      _setup.yml.j2             the steps every job starts with
    Every template sees `ctx` (relforge.workflows.context.RenderContext) and
    `action("owner/repo")`, which returns a pinned `uses:` value.
    """
    request = RenderRequest(
        matrix_file=Path(file),
        release=release,
        out_dir=out_dir,
        templates_dir=templates_dir,
        ref=ref,
    )
    rendered = render_workflows(request)
    shown = _display(out_dir)
    if check:
        drifts = check_dir(out_dir, rendered, shown)
        if not drifts:
            click.echo(f"{len(rendered.files)} workflow files in {shown} are current")
            return
        for drift in drifts:
            click.echo(drift.diff, nl=False)
        listing = ", ".join(f"{d.name} ({d.kind})" for d in drifts)
        click.echo(
            f"{len(drifts)} workflow file(s) in {shown} are stale: {listing}\n"
            f"  hint: regenerate with `{rendered.regenerate}`",
            err=True,
        )
        append_step_summary(
            f"### Generated workflows are stale\n\n{listing}\n\n"
            f"Regenerate with `{rendered.regenerate}`."
        )
        sys.exit(1)  # like `git diff --exit-code`: 1 means "differs"
    report = write_dir(out_dir, rendered)
    for name, why in rendered.skipped:
        click.echo(f"skipped {shown}/{name}: {why}", err=True)
    jobs = {f.name: f.jobs for f in rendered.files}
    for kind, names in (
        ("created", report.created),
        ("updated", report.updated),
        ("unchanged", report.unchanged),
        ("removed", report.removed),
    ):
        for name in names:
            cells = f" ({jobs[name]} cells)" if jobs.get(name) else ""
            click.echo(f"{kind:9} {shown}/{name}{cells}")


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
