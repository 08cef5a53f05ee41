"""`relforge matrix …`: list, explain, diff, docs, lint and check a build matrix."""

from __future__ import annotations

from pathlib import Path

import click

from relforge.actions import append_markdown, step_summary
from relforge.atomic import replacing
from relforge.cli.options import (
    channel_option,
    date_option,
    format_option,
    parse_date,
    parse_selectors,
    release_option,
    releases_option,
    select_option,
)
from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import NothingToDoError, UsageError, ValidationFailed
from relforge.matrix import (
    CHANNEL_NAMES,
    Cell,
    ChannelName,
    Matrix,
    candidates,
    expand_cells,
    load_matrix,
    newest_release,
)
from relforge.output import console, print_foreign_json, print_json

_FILE_HELP = "Matrix file, or REV:PATH for the file at a git revision."


@click.group()
def matrix() -> None:
    """Load, expand, explain, compare and document a build matrix."""


@matrix.command("list")
@click.argument("file", metavar="FILE")
@release_option("Release X.Y to expand (default: the newest; it says which).", required=False)
@channel_option("Stamp each cell with the channel's version and upload location.", CHANNEL_NAMES)
@select_option(
    "Keep cells matching e.g. 'os=linux,accelerator=cuda|rocm,python>=3.12' or "
    "an id glob; repeat to keep the union.",
)
@format_option("table", "json", "github", help='github prints {"include": [...]} for a job matrix.')
@date_option("Date of nightly versions (default: today in UTC, or SOURCE_DATE_EPOCH).")
def list_cells(
    file: str,
    release: str | None,
    channel: ChannelName | None,
    selects: tuple[str, ...],
    fmt: str,
    date_text: str | None,
) -> None:
    """List the cells of one release (default: the newest). FILE is a matrix file (or
    REV:PATH)."""
    date = parse_date(date_text)
    loaded = load_matrix(file)
    if release is None:
        release = newest_release(loaded)
        others = len(loaded.releases) - 1
        click.echo(
            f"release {release}: the newest"
            + (f" of {others + 1}; pick another with --release" if others else ", the only one"),
            err=True,
        )
    selectors = parse_selectors(selects, loaded.release(release).axes)
    if date is not None and (
        channel is None or loaded.channels.get(channel).version_scheme != "dev-date"
    ):
        raise UsageError(
            "only nightly versions carry a date"
            + (f"; channel {channel} has final versions" if channel else ""),
            key="--date",
            hint="give --channel nightly, or leave out --date",
        )
    cells = expand_cells(loaded, release, channel=channel, date=date, selectors=selectors)
    if not cells and not selects:
        offered = candidates(loaded, loaded.release(release))
        raise NothingToDoError(
            f"release {release} has no cells: "
            + (
                f"its exclude rules remove all {len(offered)}"
                if offered
                else "no accelerator variant is built on any of its platforms"
            ),
            hint=f"see why with: relforge matrix explain {file} --release {release} CELL",
        )
    if not cells:
        raise NothingToDoError(
            f"no cell of release {release} matches " + " or ".join(repr(s) for s in selects),
            key="--select",
        )
    if fmt == "json":
        print_json({"release": release, "cells": [c.to_json() for c in cells]})
    elif fmt == "github":  # GitHub's job matrix: a key of ours would become an axis
        print_foreign_json({"include": [c.to_json() for c in cells]})
    else:
        _print_cells(loaded, release, cells, channel)
    append_markdown(_cells_markdown(loaded, release, cells))


def _print_cells(
    loaded: Matrix, release: str, cells: list[Cell], channel: ChannelName | None
) -> None:
    from rich.table import Table

    table = Table(
        title=f"{loaded.project.title} {release}: {len(cells)} cells", title_justify="left"
    )
    for name in ("id", "python", "accelerator", "platform tag", "abi", "image", "reqs"):
        table.add_column(name, no_wrap=True)
    if channel:
        table.add_column("version", no_wrap=True)
    for c in cells:
        accel = c.accelerator + (
            f" {c.accelerator_full_version}" if c.accelerator_full_version else ""
        )
        row = [
            c.id,
            f"{c.serves_python[0]}–{c.serves_python[-1]} abi3"
            if c.serves_python
            else c.python or "—",
            accel,
            c.platform_tag or "—",
            "cxx11" if c.cxx11_abi else "pre-cxx11",
            c.image or "—",
            "bundled" if c.bundles_libraries else str(len(c.extra_install_requires)),
        ]
        if channel:
            row.append(c.version or "")
        table.add_row(*row)
    console().print(table)


def _cells_markdown(loaded: Matrix, release: str, cells: list[Cell]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for c in cells:
        counts[(c.package_type, c.platform)] = counts.get((c.package_type, c.platform), 0) + 1
    lines = [
        f"### {loaded.project.title} {release}: {len(cells)} cells",
        "",
        "| Package | Platform | Cells |",
        "|---|---|---:|",
    ]
    lines += [f"| {t} | {p} | {n} |" for (t, p), n in counts.items()]
    return "\n".join(lines)


@matrix.command()
@click.argument("file", metavar="FILE")
@click.argument("cell_id", metavar="CELL")
@release_option("Release X.Y.")
@format_option("text", "json")
def explain(file: str, cell_id: str, release: str, fmt: str) -> None:
    """Why CELL exists in a release, or which rule or definition keeps it out."""
    from relforge.matrix import explain_cell

    found = explain_cell(load_matrix(file), release, cell_id)
    if found.status == "unknown":
        hint = (
            "did you mean " + ", ".join(found.suggestions) + "?"
            if found.suggestions
            else f"list the ids with: relforge matrix list {file} --release {release}"
        )
        raise UsageError(found.summary, key="CELL", hint=hint)
    if fmt == "json":
        print_json(found.to_json())
        return
    click.echo(found.summary)
    for reason in found.reasons:
        click.echo(f"  - {reason.text}" + (f"  ({reason.where})" if reason.where else ""))


@matrix.command()
@click.argument("file", metavar="FILE")
@click.argument("other", metavar="[OTHER]", required=False)
@click.option("--from", "from_release", required=True, help="Release X.Y to compare from.")
@click.option(
    "--to", "to_release", help="Release X.Y to compare to (default: --from when OTHER is given)."
)
@format_option("markdown", "json")
def diff(file: str, other: str | None, from_release: str, to_release: str | None, fmt: str) -> None:
    """Compare two releases: of FILE, or of FILE (old) and OTHER (new).

    FILE and OTHER may be REV:PATH to read a git revision, e.g. HEAD~1:matrix/pytorch.yaml.
    """
    from relforge.matrix import diff_releases, render_markdown

    if to_release is None:
        if other is None:
            raise UsageError("give --to, or a second matrix file to compare with", key="--to")
        to_release = from_release
    old = load_matrix(file)
    new = load_matrix(other) if other else old
    for flag, name, loaded in (("--from", from_release, old), ("--to", to_release, new)):
        if name not in loaded.releases:
            known = ", ".join(loaded.releases)
            raise UsageError(
                f"release {name!r} is not in {loaded.file} (releases: {known})", key=flag
            )
    labels = (f"{from_release} ({file})", f"{to_release} ({other})") if other else (None, None)
    result = diff_releases(
        old, from_release, new, to_release, old_label=labels[0], new_label=labels[1]
    )
    markdown = render_markdown(result)
    if fmt == "json":
        print_json(result.to_json())
    else:
        click.echo(markdown, nl=False)
    append_markdown(markdown)


@matrix.command()
@click.argument("file", metavar="FILE")
@releases_option("Release(s) to give install commands for (default: all).")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file instead of stdout.",
)
@click.option(
    "--download-url",
    default=None,
    help="Base URL of the channel folders instead of project.download_url (a mirror).",
)
def docs(
    file: str, releases: tuple[str, ...], out_path: Path | None, download_url: str | None
) -> None:
    """The compatibility table of every release and install commands per variant and channel."""
    from relforge.matrix import base_url_problem, render_docs, with_download_url

    if out_path is not None and out_path.name in ("", ".", ".."):
        raise UsageError(f"{str(out_path)!r} is not a file name", key="--out")
    problem = None if download_url is None else base_url_problem(download_url)
    if problem:
        raise UsageError(f"{download_url!r} {problem}", key="--download-url")
    matrix = load_matrix(file)
    if download_url is not None:
        matrix = with_download_url(matrix, download_url)
    text = render_docs(matrix, list(releases) or None)
    if out_path is None:
        click.echo(text, nl=False)
        return
    try:
        with replacing(out_path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as exc:
        if is_environment_fault(exc):  # read-only, full, not permitted: exit 6, not 2
            raise environment_fault(exc, f"cannot write {out_path}", "--out") from None
        raise UsageError(f"cannot write {out_path}: {exc.strerror}", key="--out") from None
    click.echo(f"wrote {out_path}", err=True)


@matrix.command()
@click.argument("file", metavar="FILE")
@releases_option("Release(s) to lint (default: all).")
@format_option("table", "json")
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
def lint(file: str, releases: tuple[str, ...], fmt: str, strict: bool) -> None:
    """Policy checks with stable IDs (RF-L001…); exit 4 when an error (or, with --strict, any
    finding) is found."""
    from relforge.matrix import lint_report

    report = lint_report(load_matrix(file), list(releases) or None, strict=strict)
    if fmt == "json":
        print_json(report.to_json())
    else:
        for line in report.lines():
            click.echo(line)
    report.annotate()
    if report.findings:
        step_summary("Matrix lint", report.summary_markdown())
    if report.failing:
        from relforge.reference import explained

        first = report.failing[0].rule.id
        why = explained(first)
        raise ValidationFailed(
            f"{len(report.failing)} of {len(report.findings)} findings fail the lint",
            hint=why if strict else f"{why}; warnings do not fail, --strict makes them",
        )


@matrix.command()
@click.argument("file", metavar="FILE")
def check(file: str) -> None:
    """Load FILE strictly and report what it holds (exit 2 with the first problem)."""
    loaded = load_matrix(file)
    parts = [f"{name}: {len(expand_cells(loaded, name))} cells" for name in loaded.releases]
    click.echo(f"{file}: ok — {len(loaded.releases)} releases ({'; '.join(parts)})")
