"""`relforge validate`: check a release's artifacts against its cells."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import click

from relforge.actions import append_markdown
from relforge.cli.options import (
    channel_option,
    date_option,
    format_option,
    jobs_option,
    optional_release_option,
    parse_date,
    parse_selectors,
    select_option,
)
from relforge.errors import UsageError, ValidationFailed
from relforge.matrix import CHANNEL_NAMES, AnyChannel
from relforge.output import print_json

if TYPE_CHECKING:
    from relforge.validate import ValidationReport


@click.command()
@click.argument("file", metavar="FILE")
@optional_release_option(
    "Release X.Y whose cells are expected (default: the --manifest's; required otherwise)."
)
@channel_option(
    "Channel whose versions are expected (default: the --manifest's channel, else the "
    "matrix's channels.default); dev: a local build's dev0 versions.",
    (*CHANNEL_NAMES, "dev"),
    short=True,
)
@click.option(
    "--dist",
    "dist",
    type=click.Path(path_type=Path),
    help="Directory of wheels (*.whl) and native archives (*.zip) to validate.",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(path_type=Path),
    help="Artifact manifest: the cells it holds are checked (its files get the verdicts; the "
    "cells its build skipped are reported as skipped).",
)
@click.option(
    "--whole",
    is_flag=True,
    help="With --manifest: also expect every selected cell of the release the manifest does "
    "not hold (RF-V100 fails for each), as publishing a whole release does.",
)
@click.option("--index", "index_url", help="PEP 503 index to download the wheels from.")
@click.option("--runtime", is_flag=True, help="Also install each wheel and run its smoke test.")
@click.option(
    "--runtime-index",
    metavar="URL",
    help="Index the wheels' dependencies come from at runtime, e.g. https://pypi.org/simple/ "
    "(default: --index, else the channel's mirrored closure from `relforge deps mirror`); the "
    "wheel under test is always installed from its file.",
)
@click.option(
    "--require-gpu",
    is_flag=True,
    help="With --runtime: this machine must have an NVIDIA GPU; a CUDA cell's GPU checks "
    "(RF-R004, RF-R006) fail instead of skipping when nvidia-smi finds none (a GPU runner "
    "that lost its GPU).",
)
@select_option()
@date_option(
    "Date of nightly versions (default: the one the --manifest's versions carry, else "
    "today in UTC).",
)
@click.option("--size-limit-mb", type=click.IntRange(min=1), help="Override project.size_limit_mb.")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="C++ namespace(s) of the project for the ABI check (default: all but std).",
)
@format_option("table", "json", "junit")
@click.option("--summary", is_flag=True, help="Markdown summary to $GITHUB_STEP_SUMMARY.")
@click.option(
    "--with",
    "with_wheels",
    multiple=True,
    metavar="DEP.whl",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A dependency's wheel providing libraries and symbols (repeatable).",
)
@jobs_option("Threads reading wheels.", default=2)
def validate(
    file: str,
    release: str | None,
    channel: AnyChannel | None,
    dist: Path | None,
    manifest_path: Path | None,
    whole: bool,
    index_url: str | None,
    runtime: bool,
    runtime_index: str | None,
    require_gpu: bool,
    selects: tuple[str, ...],
    date_text: str | None,
    size_limit_mb: int | None,
    namespaces: tuple[str, ...],
    fmt: str,
    summary: bool,
    with_wheels: tuple[Path, ...],
    jobs: int,
) -> None:
    """Check every artifact of a release against its cell (FILE is the matrix), statically and
    with --runtime by installing it; exit 4 when any check fails."""
    from relforge.deps import Closure, mirrored_closure
    from relforge.matrix import load_matrix
    from relforge.validate import ArtifactSource, Options, ValidateRequest, validate_release

    source = ArtifactSource.choose(dist=dist, manifest_path=manifest_path, index_url=index_url)
    date = parse_date(date_text)
    matrix = load_matrix(file)
    release, channel = source.target(matrix, release, channel, whole=whole)
    selectors = parse_selectors(selects, matrix.release(release).axes)
    closure: contextlib.AbstractContextManager[Closure] = contextlib.nullcontext(Closure({}))
    if require_gpu and not runtime:
        raise UsageError(
            "--require-gpu asks for the GPU checks, which run with --runtime only",
            key="--require-gpu",
            hint="add --runtime",
        )
    if runtime and runtime_index is None and index_url is None and channel != "dev":
        closure = mirrored_closure(matrix, release, channel)
    with closure as mirrored:
        if mirrored.note:
            click.echo(f"note: {mirrored.note}", err=True)
        options = Options(
            runtime=runtime,
            runtime_index=runtime_index,
            mirrored=mirrored.indexes,
            size_limit_mb=size_limit_mb,
            namespaces=namespaces,
            jobs=jobs,
            dependencies=with_wheels,
            require_gpu=require_gpu,
        )
        report = validate_release(
            ValidateRequest(
                matrix=matrix,
                release=release,
                channel=channel,
                source=source,
                selectors=selectors,
                whole=whole,
                date=date,
                options=options,
            )
        )
    if fmt == "json":
        print_json(report.to_json())
    elif fmt == "junit":
        click.echo(report.to_junit())
    else:
        report.print_table()
    report.fold_details()
    report.annotate()
    if summary:
        append_markdown(report.to_markdown())
    _fail_on_failures(report)


def _fail_on_failures(report: ValidationReport) -> None:
    """Exit 4 naming the first failing artifacts when any check failed."""
    failures = report.failures
    if failures:
        from relforge.reference import explained

        subjects = sorted({a.subject for a, _ in failures})
        first = failures[0][1].check
        raise ValidationFailed(
            f"{len(failures)} checks failed on {len(subjects)} of {len(report.artifacts)} "
            f"artifacts: {', '.join(subjects[:5])}" + (" …" if len(subjects) > 5 else ""),
            hint="the report above names each check; `relforge wheel inspect WHEEL` shows one "
            f"file; {explained(first)}",
        )
