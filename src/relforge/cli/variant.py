"""`relforge variant …`: experimental PEP 825 variant wheels (the format is a draft)."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.actions import step_summary
from relforge.cli.options import channel_option, execute_option, stop_for_dry_run
from relforge.matrix import ChannelName


@click.group()
def variant() -> None:
    """Experimental: PEP 825 variant wheels and their index folder."""


@variant.command("publish")
@click.argument("file", metavar="FILE")
@channel_option(
    "Channel whose variant folder is filled (default: the matrix's channels.default).",
    ("nightly", "test"),
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Artifact manifest whose validated wheels become variant wheels.",
)
@execute_option()
def publish_command(
    file: str, channel: ChannelName | None, manifest_path: Path, execute: bool
) -> None:
    """Stage the validated wheels of a manifest as variant wheels (label and variant.json per
    the release's `variants:`) and publish them with {name}-{version}-variants.json to the
    channel's variant folder.  FILE is the matrix file."""
    from relforge.manifest import load_manifest
    from relforge.matrix import load_matrix
    from relforge.matrixstores import main_store
    from relforge.variants import VariantRequest, apply_variants, plan_variants, staging_dir

    matrix = load_matrix(file)
    chosen = matrix.channels.pick(channel)
    manifest = load_manifest(manifest_path)
    store = main_store(matrix)
    request = VariantRequest(
        matrix=matrix,
        release=manifest.release,
        channel=chosen,
        manifest=manifest,
        dist=manifest_path.parent,
    )
    with staging_dir(Path(".relforge") / "work") as work:
        plan = plan_variants(store, work, request)
        click.echo(f"variant wheels of {manifest.project} {manifest.release} → {store.url}:")
        for line in plan.lines():
            click.echo(line)
        if stop_for_dry_run(execute):
            return
        written = apply_variants(store, plan)
    summary = plan.summary(written)
    click.echo(summary)
    step_summary("relforge variant publish", summary)


@variant.command("check")
@click.argument("folder", type=click.Path(file_okay=False, exists=True, path_type=Path))
def check_command(folder: Path) -> None:
    """Check every variant wheel of FOLDER against the variants.json beside it (label ↔
    variant.json ↔ variants.json, RECORD); exit 4 on any problem."""
    from relforge.errors import NothingToDoError, ValidationFailed
    from relforge.variants import check_variant_folder

    found = check_variant_folder(folder)
    if not found:
        raise NothingToDoError(f"{folder} holds no variant wheel or variants.json")
    bad = {name: problems for name, problems in found.items() if problems}
    for name, problems in found.items():
        click.echo(
            f"{'FAIL' if problems else 'ok  '}  {name}" + "".join(f"\n      {p}" for p in problems)
        )
    if bad:
        raise ValidationFailed(f"{len(bad)} of {len(found)} file(s) are inconsistent")
