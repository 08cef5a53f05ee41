"""`relforge workflows …`: render GitHub Actions workflows from the matrix, or check them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from relforge.actions import step_summary
from relforge.cli.options import release_option
from relforge.errors import ValidationFailed
from relforge.workflows import (
    LintConfig,
    RenderRequest,
    WorkflowSet,
    check_dir,
    config_drift,
    plan_config,
    render_workflows,
    write_dir,
)


@click.group()
def workflows() -> None:
    """Render GitHub Actions workflows from the build matrix."""


@workflows.command("generate")
@click.argument("file", metavar="FILE")
@release_option("Release X.Y whose cells the jobs build.")
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
    "--no-upload",
    "no_upload",
    is_flag=True,
    help="Build and test only: no upload, index, promote or PyPI jobs (needed while "
    "publishing.store is a file:// store, which no two runners share).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: exit 4 with a unified diff when a file is edited, missing or stray.",
)
def generate(
    file: str,
    release: str,
    out_dir: Path,
    templates_dir: Path | None,
    ref: str | None,
    no_upload: bool,
    check: bool,
) -> None:
    """Render the workflows of one release of FILE into --out.

    Writes relforge-build.yml (reusable: build, test and upload one cell),
    relforge-<os>-<package type>.yml (every cell, sharded into job matrices of at most 256,
    each ending with an index job), relforge-bot.yml, relforge-validate-binaries.yml,
    relforge-site.yml and the release-day workflows relforge-promote.yml and relforge-pypi.yml;
    files relforge generated earlier that are no longer part of the set are removed.  Run it
    from the repository root.  Uploading jobs need an s3:// store (else --no-upload).

    \b
    Templates (Jinja, sandboxed, strict; <{ value }>, <% statement %>, <# comment #>):
      build.yml.j2              reusable workflow: build, test, upload one cell
      binaries.yml.j2           one per OS and package type (variable `group`)
      bot.yml.j2                the cherry-pick bot
      validate-binaries.yml.j2  install every wheel cell from its index (`channels`)
      site.yml.j2               the install selector site
      promote.yml.j2            release day: promote a version between channels
      pypi.yml.j2               release day: stage and upload the PyPI wheels
      _setup.yml.j2             the steps every job starts with (checkout + _relforge)
      _relforge.yml.j2          relforge's Python and the pinned relforge (ci.relforge)
      _store_credentials.yml.j2 the S3 store's credentials (OIDC role or the runner's)
    Every template sees `ctx` (relforge.workflows.context.RenderContext) and
    `action("owner/repo")`, which returns a pinned `uses:` value.
    """
    request = RenderRequest(
        matrix_file=Path(file),
        release=release,
        out_dir=out_dir,
        templates_dir=templates_dir,
        ref=ref,
        upload=not no_upload,
    )
    rendered = render_workflows(request)
    shown = _display(out_dir)
    config = plan_config(out_dir, rendered.runner_labels, rendered.variables)
    if check:
        _check(out_dir, shown, rendered, config)
        return
    report = write_dir(out_dir, rendered, config)
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
    if config is not None:
        labels = f" (runner labels: {', '.join(rendered.runner_labels) or 'none'})"
        click.echo(f"{report.config:9} {_display(config.path)}{labels}")
    else:
        click.echo(
            f"skipped actionlint configuration: {shown} is not a .github/workflows directory",
            err=True,
        )


def _check(out_dir: Path, shown: str, rendered: WorkflowSet, config: LintConfig | None) -> None:
    """--check: say the set is current, or print the diffs and exit 4 (validation failed)."""
    drifts = check_dir(out_dir, rendered, shown)
    config_stale = config_drift(config, _display(config.path)) if config else None
    if not drifts and config_stale is None:
        click.echo(f"{len(rendered.files)} workflow files in {shown} are current")
        if config is not None:
            click.echo(f"{_display(config.path)} lists their runner labels")
        return
    for drift in [*drifts, *([config_stale] if config_stale else [])]:
        click.echo(drift.diff, nl=False)
    stale: list[str] = []
    listing = ", ".join(
        f"{d.name} ({'not generated by relforge' if d.kind == 'foreign' else d.kind})"
        for d in drifts
    )
    if drifts:
        stale.append(f"{len(drifts)} workflow file(s) in {shown} are stale: {listing}")
    if config_stale is not None:
        labels = ", ".join(rendered.runner_labels) or "none"
        state = "missing" if config_stale.kind == "missing" else "out of date"
        stale.append(
            f"{config_stale.name} is {state}: actionlint needs the workflows' runner labels "
            f"({labels}) in it"
        )
    foreign = [d.name for d in drifts if d.kind == "foreign"]
    first = f"rename or remove {', '.join(foreign)} (not ours), then " if foreign else ""
    click.echo(
        "\n".join(stale) + f"\n  hint: {first}regenerate with `{rendered.regenerate}`", err=True
    )
    summary = "\n\n".join(stale)
    step_summary(
        "Generated workflows are stale",
        f"{summary}\n\nRegenerate with `{rendered.regenerate}`.",
    )
    sys.exit(ValidationFailed.exit_code)  # 4: a check failed; 1 is kept for bugs


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
