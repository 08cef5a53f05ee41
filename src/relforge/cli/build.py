"""`relforge build`: build matrix cells (Docker or host) in parallel with a cache, and write the
artifact manifest; `relforge builder-image`: make the local builder image."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from relforge.actions import append_markdown
from relforge.builders import (
    BUILD_CHANNELS,
    BUILDER_CHOICES,
    PULL_POLICIES,
    Assignment,
    BuildChannel,
    BuilderChoice,
    BuilderOptions,
    PullPolicy,
    release_refused,
)
from relforge.cli.options import (
    channel_option,
    format_option,
    jobs_option,
    parse_selectors,
    release_option,
    select_option,
)
from relforge.errors import BuildFailed, NothingToDoError, UsageError
from relforge.output import console, print_json

if TYPE_CHECKING:
    from relforge.builders import BuildPlan, CellResult, ImageSpec


@click.command()
@click.argument("file", metavar="FILE")
@release_option("Release X.Y to build.")
@channel_option(
    "Channel, and so version scheme (default: the matrix's channels.default): nightly "
    "X.Y.Z.devYYYYMMDD+V, test (RC tag) X.Y.Z+V, dev X.Y.Z.dev0+V (local builds, never "
    "published).  release is refused: release artifacts are promoted, never rebuilt.",
    BUILD_CHANNELS,
)
@click.option("--cell", "cell_ids", multiple=True, metavar="ID", help="Build this cell (repeat).")
@select_option("Build the cells matching e.g. 'accelerator=cuda,python>=3.12' or an id glob.")
@click.option(
    "--builder",
    type=click.Choice(BUILDER_CHOICES),
    default="auto",
    show_default=True,
    help="auto: Docker for cells whose image the local engine has, the host otherwise.",
)
@jobs_option("Cells built at once (default: the number of cores).")
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
    "--pull",
    type=click.Choice(PULL_POLICIES),
    default=None,
    help="With --builder docker: pull a cell's image when the engine does not have it "
    "(missing, the default), every time (always), or never.  --builder auto never pulls.",
)
@format_option("table", "json")
def build(
    file: str,
    release: str,
    channel: BuildChannel | None,
    cell_ids: tuple[str, ...],
    selects: tuple[str, ...],
    builder: BuilderChoice,
    jobs: int | None,
    source: Path | None,
    out: Path,
    tag: str | None,
    network: bool,
    pull: PullPolicy | None,
    fmt: str,
) -> None:
    """Build the cells of one release of FILE, each in Docker or on the host.

    Unchanged cells come from the cache (.relforge/cache); each cell logs to
    .relforge/logs/<cell>.log.  Exit 4 when a cell failed (the others still build).
    """
    if channel == "release":
        raise release_refused()
    from relforge.builders import BuildRequest, assign_builders, plan_build, write_manifest
    from relforge.matrix import load_matrix

    matrix = load_matrix(file)
    selectors = parse_selectors(selects, matrix.release(release).axes)
    request = BuildRequest(
        matrix=matrix,
        matrix_file=file,
        release=release,
        channel=channel or matrix.channels.default,
        cell_ids=cell_ids,
        selectors=selectors,
        source=source,
        out=out,
        state=Path(".relforge"),
        jobs=jobs,
        tag=tag,
        network=network,
    )
    plan = plan_build(request)
    options = BuilderOptions(
        network=network, pull=_pull_policy(builder, pull), say=lambda t: click.echo(t, err=True)
    )
    assignment = assign_builders(plan.cells, builder, options)
    results = _run_cells(plan, assignment)
    written = write_manifest(plan, results)
    _print_results(plan, assignment, results, len(written.manifest.entries), fmt)
    for note in written.notes:
        click.echo(f"note: {note}", err=True)
    _exit_for(results)


def _pull_policy(builder: BuilderChoice, pull: PullPolicy | None) -> PullPolicy:
    if pull is None:
        return "missing" if builder == "docker" else "never"
    if builder != "docker":
        raise UsageError(
            f"--pull {pull} needs --builder docker",
            key="--pull",
            hint="--builder auto uses only images the engine has; --builder host uses none",
        )
    return pull


def _run_cells(plan: BuildPlan, assignment: Assignment) -> list[CellResult]:
    """Print the plan's preamble and each cell's builder (stderr), then build the cells with a
    live display on a terminal, line by line otherwise."""
    from relforge.builders import LineReporter, LiveReporter, run_build

    builders = assignment.builders
    err = console(stderr=True)
    for key, value in plan.summary():
        err.print(f"[bold]{key:>8}[/]: {value}", highlight=False)
    for cell_id, why in assignment.reasons.items():
        click.echo(f"  {cell_id} → {builders[cell_id].name}: {why}", err=True)  # unwrapped
    if err.is_terminal and os.environ.get("GITHUB_ACTIONS") != "true":  # a log, not a screen
        with LiveReporter(len(plan.cells)) as live:
            return run_build(plan, builders, live)
    with LineReporter(len(plan.cells)) as lines:
        return run_build(plan, builders, lines)


def _print_results(
    plan: BuildPlan,
    assignment: Assignment,
    results: list[CellResult],
    entries: int,
    fmt: str,
) -> None:
    from relforge.builders import results_json, shown, summary_markdown, summary_table

    if fmt == "json":
        cells = results_json(results, assignment.reasons)
        print_json({"manifest": str(plan.manifest_path), "cells": cells})
    else:
        out = console()
        out.print(summary_table(results, out.width))
        click.echo(f"manifest: {shown(plan.manifest_path)} ({entries} entries)")
    append_markdown(summary_markdown(results))


def _exit_for(results: list[CellResult]) -> None:
    """Exit 4 when a cell failed ("build failed", each failed cell's error line and log), 3
    when every cell was skipped."""
    from relforge.builders import failure_report

    failure = failure_report(results)
    if failure is not None:
        message, hint = failure
        raise BuildFailed(message, hint=hint)
    if all(r.status == "skipped" for r in results):
        raise NothingToDoError(
            "every selected cell was skipped: " + results[0].reason,
            hint="see the reasons above; --builder docker or host may satisfy them",
        )


@click.command("builder-image")
@click.option("--name", default="relforge/builder:bookworm", show_default=True)
@click.option("--suite", default="bookworm", show_default=True, help="Debian suite.")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option(
    "--python",
    "pythons",
    multiple=True,
    metavar="X.Y [X.Y …]",
    help="Copy the host's CPython X.Y (3.13t: free-threaded) to /opt/python/cpXY-cpXY; "
    "found in pyenv, uv or on PATH.",
)
@click.option(
    "--cuda",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Copy this CUDA toolkit (e.g. /usr/local/cuda-13.0) to /usr/local/cuda-X.Y.",
)
@click.option(
    "--with",
    "extra",
    multiple=True,
    metavar="REQ",
    help="Also install REQ into each interpreter (besides pip, setuptools, wheel).",
)
@click.option("--rebuild", is_flag=True, help="Make the image even if the engine has it.")
@click.argument("more_pythons", nargs=-1, metavar="")
def builder_image(
    name: str,
    suite: str,
    mirror: str,
    pythons: tuple[str, ...],
    cuda: tuple[Path, ...],
    extra: tuple[str, ...],
    rebuild: bool,
    more_pythons: tuple[str, ...],
) -> None:
    """Make a local builder image: debootstrap (Python, gcc, g++) + docker import.

    With --python 3.10 3.11 …, a manylinux-style image on top of it holding the host's
    interpreters under /opt/python/cpXY-cpXY (and --cuda toolkits), checked inside a container;
    cached by the digest of its inputs.  The root filesystem tarball is cached
    (~/.cache/relforge/rootfs).  Uses the engine of DOCKER_HOST; a no-op when the image exists.
    """
    from relforge.builders import ImageSpec, make_builder_image

    wanted = _python_list(pythons, more_pythons)
    say = lambda text: click.echo(text, err=True)  # noqa: E731
    spec = ImageSpec(name=name, suite=suite, mirror=mirror)
    if wanted:
        _python_image(spec, wanted, cuda, extra, rebuild, say)
        return
    if cuda or extra:
        raise UsageError("--cuda and --with need --python", key="--python")
    result = make_builder_image(spec, rebuild=rebuild, say=say)
    if not result.made:
        click.echo(f"{result.name} is already in the engine ({result.id[:19]}); nothing to do")
        return
    reused = " (cached rootfs)" if result.tarball_reused else ""
    click.echo(f"made {result.name} ({result.id[:19]}) from {result.tarball}{reused}")


def _python_list(first: tuple[str, ...], more: tuple[str, ...]) -> list[str]:
    """`--python 3.10 3.11` (the values after the option), `--python 3.10,3.11`, repeated."""
    from relforge.matrix import PythonVersion

    if more and not first:
        raise UsageError(f"unexpected argument {more[0]!r}", key="--python")
    wanted = [v for text in (*first, *more) for v in text.split(",") if v.strip()]
    for text in wanted:
        try:
            PythonVersion.parse(text)
        except ValueError as exc:
            raise UsageError(str(exc), key="--python") from None
    return [str(PythonVersion.parse(t)) for t in wanted]


def _python_image(
    spec: ImageSpec,
    wanted: list[str],
    cuda: tuple[Path, ...],
    extra: tuple[str, ...],
    rebuild: bool,
    say: Callable[[str], None],
) -> None:
    from relforge.builders import (
        BUILD_REQUIREMENTS,
        PythonImageSpec,
        base_spec,
        make_python_image,
    )

    result = make_python_image(
        PythonImageSpec(
            name=spec.name,
            base=base_spec(spec, spec.name),
            pythons=tuple(wanted),
            cuda=cuda,
            requirements=(*BUILD_REQUIREMENTS, *extra),
        ),
        rebuild=rebuild,
        say=say,
    )
    for python in result.pythons:
        click.echo(f"  /opt/python/{python.tag}: {python.label}")
    for toolkit in result.cuda:
        click.echo(f"  /usr/local/cuda-{toolkit.version}: CUDA {toolkit.version} ({toolkit.home})")
    for gone in result.missing:
        click.echo(f"  NOT FOUND: Python {gone.wanted}: {gone.why}")
    for warning in result.warnings:
        click.echo(f"  warning: {warning}")
    if result.made:
        click.echo(
            f"made {result.name} ({result.id[:19]}, inputs {result.digest[:16]}) "
            f"in {result.seconds:.0f} s; every interpreter checked inside the image"
        )
    else:
        click.echo(
            f"{result.name} = the image of these inputs ({result.digest[:16]}, "
            f"{result.id[:19]}); nothing to do"
        )
