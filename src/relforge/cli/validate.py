"""`relforge validate`: check a release's artifacts against its cells."""

from __future__ import annotations

import datetime
import tempfile
from pathlib import Path

import click
from packaging.version import InvalidVersion, Version

from relforge.errors import NothingToDoError, UsageError, ValidationFailed
from relforge.manifest import ArtifactManifest
from relforge.matrix.schema import CHANNEL_NAMES, ChannelName
from relforge.output import append_step_summary, print_json


@click.command()
@click.argument("file", metavar="FILE")
@click.option("--release", "-r", required=True, help="Release X.Y whose cells are expected.")
@click.option(
    "--channel",
    "-c",
    type=click.Choice(CHANNEL_NAMES),
    help="Channel whose versions are expected (default: the matrix's channels.default).",
)
@click.option(
    "--dist", "dist", type=click.Path(path_type=Path), help="Directory of wheels to validate."
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(path_type=Path),
    help="Artifact manifest: its files are checked against their cells and get the verdicts.",
)
@click.option("--index", "index_url", help="PEP 503 index to download the wheels from.")
@click.option("--runtime", is_flag=True, help="Also install each wheel and run its smoke test.")
@click.option(
    "--runtime-index",
    help="Index pip installs from at runtime (default: --index, else the file itself).",
)
@click.option(
    "--select", "-s", "selects", multiple=True, metavar="SELECTOR", help="Only these cells."
)
@click.option(
    "--date",
    "date_text",
    metavar="YYYY-MM-DD",
    help="Date of nightly versions (default: the one the --manifest's versions carry, else "
    "today in UTC).",
)
@click.option("--size-limit-mb", type=click.IntRange(min=1), help="Override project.size_limit_mb.")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="C++ namespace(s) of the project for the ABI check (default: all but std).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "junit"]),
    default="table",
    show_default=True,
)
@click.option("--summary", is_flag=True, help="Markdown summary to $GITHUB_STEP_SUMMARY.")
@click.option(
    "--with",
    "with_wheels",
    multiple=True,
    metavar="DEP.whl",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A dependency's wheel providing libraries and symbols (repeatable).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Threads reading wheels.",
)
def validate(
    file: str,
    release: str,
    channel: ChannelName | None,
    dist: Path | None,
    manifest_path: Path | None,
    index_url: str | None,
    runtime: bool,
    runtime_index: str | None,
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
    from relforge.cli.matrix import parse_selectors
    from relforge.manifest import load_manifest
    from relforge.matrix.expand import expand_cells
    from relforge.matrix.load import load_matrix
    from relforge.validate.completeness import Artifact, expected_filename
    from relforge.validate.run import Options, managed_names, validate_artifacts
    from relforge.validate.wheel import WheelError

    sources = [s for s in (dist, manifest_path, index_url) if s is not None]
    if len(sources) != 1:
        raise UsageError(
            "give exactly one of --dist DIR, --manifest FILE or --index URL", key="--dist"
        )
    date = None
    if date_text:
        try:
            date = datetime.date.fromisoformat(date_text)
        except ValueError:
            raise UsageError(f"{date_text!r} is not a date like 2025-10-15", key="--date") from None
    matrix = load_matrix(file)
    channel = matrix.channels.pick(channel)
    rel = matrix.release(release)
    manifest = load_manifest(manifest_path) if manifest_path is not None else None
    if date is None and manifest is not None:
        date = _build_date(manifest)  # a nightly validated after midnight keeps its build's day
    every = expand_cells(matrix, release, channel=channel, date=date)
    cells = [
        c
        for c in expand_cells(
            matrix,
            release,
            channel=channel,
            date=date,
            selectors=parse_selectors(selects, rel.axes),
        )
        if c.package_type == "wheel"
    ]
    if not cells:
        raise NothingToDoError(f"no wheel cell of release {release} is selected", key="--select")
    # Artifacts of the release's other cells are left alone (not reported as strays).
    chosen = {c.id for c in cells}
    others = {c.id for c in every if c.id not in chosen}
    other_names = {
        expected_filename(c, matrix.project.name)
        for c in every
        if c.id in others and c.package_type == "wheel"
    }
    with tempfile.TemporaryDirectory(prefix="relforge-validate-") as tmp:
        if dist is not None:
            if not dist.is_dir():
                raise UsageError(f"{dist}: not a directory", key="--dist")
            artifacts = [
                Artifact(path=p) for p in sorted(dist.glob("*.whl")) if p.name not in other_names
            ]
        elif manifest is not None and manifest_path is not None:
            if manifest.release != release or manifest.channel != channel:
                raise UsageError(
                    f"{manifest_path} is for release {manifest.release} on {manifest.channel}, "
                    f"not {release} on {channel}",
                    key="--manifest",
                )
            base = manifest_path.parent
            artifacts = [
                Artifact(path=base / e.file, cell_id=e.cell_id)
                for e in manifest.entries.values()
                if e.cell_id not in others
            ]
        else:
            from relforge.validate.fetch import fetch_from_index

            assert index_url is not None
            wanted = {expected_filename(c, matrix.project.name) for c in cells}
            artifacts = fetch_from_index(index_url, matrix.project.name, wanted, Path(tmp))
            runtime_index = runtime_index or index_url
        options = Options(
            runtime=runtime,
            runtime_index=runtime_index,
            size_limit_mb=size_limit_mb,
            namespaces=namespaces,
            jobs=jobs,
            workdir=Path(tmp) / "runtime",
            dependencies=with_wheels,
        )
        try:
            report = validate_artifacts(
                matrix, rel, channel, cells, artifacts, options, managed=managed_names(every)
            )
        except WheelError as exc:
            raise UsageError(str(exc), key="--with") from None
    if manifest is not None and manifest_path is not None:
        for entry in report.artifacts:
            if entry.cell_id and entry.cell_id in manifest.entries and entry.file:
                manifest = manifest.with_verdicts(entry.cell_id, entry.verdicts)
        manifest.save(manifest_path)
    if fmt == "json":
        print_json(report.to_json())
    elif fmt == "junit":
        click.echo(report.to_junit())
    else:
        report.print_table()
    if summary:
        append_step_summary(report.to_markdown())
    failures = report.failures
    if failures:
        subjects = sorted({a.subject for a, _ in failures})
        raise ValidationFailed(
            f"{len(failures)} checks failed on {len(subjects)} of {len(report.artifacts)} "
            f"artifacts: {', '.join(subjects[:5])}" + (" …" if len(subjects) > 5 else ""),
            hint="the report above names each check; `relforge wheel inspect WHEEL` shows one file",
        )


def _build_date(manifest: ArtifactManifest) -> datetime.date | None:
    """The day of the manifest's nightly versions (X.Y.Z.devYYYYMMDD+V) when they all share one;
    None otherwise (then the expected versions carry today's date)."""
    days = set()
    for entry in manifest.entries.values():
        try:
            dev = Version(entry.version).dev
            days.add(datetime.datetime.strptime(str(dev), "%Y%m%d").date())
        except (InvalidVersion, ValueError):
            return None
    return days.pop() if len(days) == 1 else None
