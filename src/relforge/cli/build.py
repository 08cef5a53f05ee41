"""`relforge build`: build matrix cells (Docker or host) in parallel with a cache, and write the
artifact manifest; `relforge builder-image`: make the local builder image."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.builders.registry import BUILDER_CHOICES, BuilderChoice, BuilderOptions
from relforge.builders.version import BUILD_CHANNELS, BuildChannel, release_refused
from relforge.cli.matrix import parse_selectors
from relforge.cli.output import append_step_summary, console, print_json
from relforge.errors import NothingToDoError, ValidationFailed


@click.command()
@click.argument("file", metavar="FILE")
@click.option("--release", "-r", required=True, help="Release X.Y to build.")
@click.option(
    "--channel",
    type=click.Choice(BUILD_CHANNELS),
    default="dev",
    show_default=True,
    help="Version scheme: dev X.Y.Z.dev0+V, nightly X.Y.Z.devYYYYMMDD+V, test (RC tag) "
    "X.Y.Z+V.  release is refused: release artifacts are promoted, never rebuilt.",
)
@click.option("--cell", "cell_ids", multiple=True, metavar="ID", help="Build this cell (repeat).")
@click.option(
    "--select",
    "-s",
    "selects",
    multiple=True,
    metavar="SELECTOR",
    help="Build the cells matching e.g. 'accelerator=cuda,python>=3.12' or an id glob.",
)
@click.option(
    "--builder",
    type=click.Choice(BUILDER_CHOICES),
    default="auto",
    show_default=True,
    help="auto: Docker for cells whose image the local engine has, the host otherwise.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Cells built at once (default: the number of cores).",
)
@click.option(
    "--source",
    type=click.Path(file_okay=False, path_type=Path),
    help="Source tree (default: project.build.source, relative to FILE; else the current dir).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("dist"),
    show_default=True,
    help="Where artifacts and relforge-manifest.json go.",
)
@click.option("--tag", help="RC tag of a test-channel build (default: the RC tag at HEAD).")
@click.option("--network", is_flag=True, help="Give Docker builds a network (default: none).")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def build(
    file: str,
    release: str,
    channel: BuildChannel,
    cell_ids: tuple[str, ...],
    selects: tuple[str, ...],
    builder: BuilderChoice,
    jobs: int | None,
    source: Path | None,
    out: Path,
    tag: str | None,
    network: bool,
    fmt: str,
) -> None:
    """Build the cells of one release of FILE, each in Docker or on the host.

    Unchanged cells come from the cache (.relforge/cache); each cell logs to
    .relforge/logs/<cell>.log.  Exit 4 when a cell failed (the others still build).
    """
    if channel == "release":
        raise release_refused()
    from relforge.builders.executor import run_build, write_manifest
    from relforge.builders.plan import plan_build
    from relforge.builders.registry import assign_builders
    from relforge.builders.report import (
        LineReporter,
        LiveReporter,
        results_json,
        shown,
        summary_markdown,
        summary_table,
    )
    from relforge.matrix.load import load_matrix

    matrix = load_matrix(file)
    selectors = parse_selectors(selects, matrix.release(release).axes)
    plan = plan_build(
        matrix,
        matrix_file=file,
        release=release,
        channel=channel,
        cell_ids=cell_ids,
        selectors=selectors,
        source=source,
        out=out,
        state=Path(".relforge"),
        jobs=jobs,
        tag=tag,
        network=network,
    )
    builders = assign_builders(plan.cells, builder, BuilderOptions(network=network))
    err = console(stderr=True)
    for key, value in plan.summary():
        err.print(f"[bold]{key:>8}[/]: {value}", highlight=False)
    if err.is_terminal:
        with LiveReporter(len(plan.cells)) as live:
            results = run_build(plan, builders, live)
    else:
        results = run_build(plan, builders, LineReporter(len(plan.cells)))
    manifest = write_manifest(plan, results)
    if fmt == "json":
        print_json({"manifest": str(plan.manifest_path), "cells": results_json(results)})
    else:
        console().print(summary_table(results))
        click.echo(f"manifest: {shown(plan.manifest_path)} ({len(manifest.entries)} entries)")
    append_step_summary(summary_markdown(results))
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise ValidationFailed(
            f"{len(failed)} of {len(results)} cells failed: "
            + ", ".join(r.cell.id for r in failed),
            hint=f"see the logs: {', '.join(shown(r.log) for r in failed[:3] if r.log)}",
        )
    if all(r.status == "skipped" for r in results):
        raise NothingToDoError(
            "every selected cell was skipped: " + results[0].reason,
            hint="see the reasons above; --builder docker or host may satisfy them",
        )


@click.command("builder-image")
@click.option("--name", default="relforge/builder:bookworm", show_default=True)
@click.option("--suite", default="bookworm", show_default=True, help="Debian suite.")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option("--rebuild", is_flag=True, help="Import again even if the engine has the image.")
def builder_image(name: str, suite: str, mirror: str, rebuild: bool) -> None:
    """Make a local builder image: debootstrap (Python, gcc, g++) + docker import.

    The root filesystem tarball is cached (~/.cache/relforge/rootfs), so later images take
    seconds.  Uses the engine of DOCKER_HOST; a no-op when the image exists.
    """
    from relforge.builders.images import ImageSpec, make_builder_image

    result = make_builder_image(
        ImageSpec(name=name, suite=suite, mirror=mirror),
        rebuild=rebuild,
        say=lambda text: click.echo(text, err=True),
    )
    if not result.made:
        click.echo(f"{result.name} is already in the engine ({result.id[:19]}); nothing to do")
        return
    reused = " (cached rootfs)" if result.tarball_reused else ""
    click.echo(f"made {result.name} ({result.id[:19]}) from {result.tarball}{reused}")
