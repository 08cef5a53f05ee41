"""Validate one release: choose where its artifacts come from (a directory, an artifact
manifest or an index), expect the selected cells (wheels and archives), run every check, and
write the verdicts back into the manifest when the artifacts came from one."""

from __future__ import annotations

import dataclasses
import datetime
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from relforge.errors import NothingToDoError, UsageError
from relforge.manifest import ArtifactManifest, load_manifest
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrix.selector import Selector
from relforge.validate.completeness import Artifact, expected_filename
from relforge.validate.report import ValidationReport
from relforge.validate.run import Options, managed_names, validate_artifacts


@dataclass(frozen=True, kw_only=True)
class ArtifactSource:
    """Where the artifacts are read from: exactly one of the three is set."""

    dist: Path | None = None
    manifest_path: Path | None = None
    index_url: str | None = None

    @classmethod
    def choose(
        cls, *, dist: Path | None, manifest_path: Path | None, index_url: str | None
    ) -> ArtifactSource:
        """The source given, or a usage error when none or several are."""
        given = [s for s in (dist, manifest_path, index_url) if s is not None]
        if len(given) != 1:
            raise UsageError(
                "give exactly one of --dist DIR, --manifest FILE or --index URL", key="--dist"
            )
        return cls(dist=dist, manifest_path=manifest_path, index_url=index_url)


@dataclass(frozen=True, kw_only=True)
class ReleaseRequest:
    """One `relforge validate` run: the release's selected wheel cells against one source."""

    matrix: Matrix
    release: str
    channel: ChannelName
    source: ArtifactSource
    selectors: Sequence[Selector] = ()
    date: datetime.date | None = None  # of nightly versions; default: the manifest's, else today
    options: Options = field(default_factory=Options)  # its workdir is set per run


@dataclass(frozen=True, kw_only=True)
class _Expected:
    every: list[Cell]  # every cell of the release
    cells: list[Cell]  # the selected wheel cells
    others: set[str]  # ids of the cells left alone
    other_names: set[str]  # file names of the artifacts of those cells
    archives: bool  # the release has archive cells (else a *.zip is none of ours)


def validate_release(request: ReleaseRequest) -> ValidationReport:
    """Check the artifacts of `request.source` against the release's selected wheel cells;
    a manifest source gets each artifact's verdicts written back.  The caller decides what the
    report's failures mean (the CLI exits 4)."""
    from relforge.wheelformat import WheelError

    source = request.source
    manifest = load_manifest(source.manifest_path) if source.manifest_path is not None else None
    date = request.date
    if date is None and manifest is not None:
        date = build_date(manifest)  # a nightly validated after midnight keeps its build's day
    expected = _expected_cells(request, date)
    with tempfile.TemporaryDirectory(prefix="relforge-validate-") as tmp:
        artifacts = _collect_artifacts(request, manifest, expected, Path(tmp))
        runtime_index = request.options.runtime_index
        if source.index_url is not None:
            runtime_index = runtime_index or source.index_url
        options = dataclasses.replace(
            request.options, runtime_index=runtime_index, workdir=Path(tmp) / "runtime"
        )
        try:
            report = validate_artifacts(
                request.matrix,
                request.matrix.release(request.release),
                request.channel,
                expected.cells,
                artifacts,
                options,
                managed=managed_names(expected.every),
            )
        except WheelError as exc:
            raise UsageError(str(exc), key="--with") from None
    if manifest is not None and source.manifest_path is not None:
        write_verdicts(manifest, source.manifest_path, report)
    return report


def _expected_cells(request: ReleaseRequest, date: datetime.date | None) -> _Expected:
    """The release's cells, the selected wheel cells among them, and the others."""
    matrix, release, channel = request.matrix, request.release, request.channel
    every = expand_cells(matrix, release, channel=channel, date=date)
    cells = [
        c
        for c in expand_cells(
            matrix, release, channel=channel, date=date, selectors=list(request.selectors)
        )
        if c.package_type == "wheel"
        or request.source.index_url is None  # an index serves no archives
    ]
    if not cells:
        raise NothingToDoError(f"no cell of release {release} is selected", key="--select")
    # Artifacts of the release's other cells are left alone (not reported as strays).
    chosen = {c.id for c in cells}
    others = {c.id for c in every if c.id not in chosen}
    other_names = {expected_filename(c, matrix.project.name) for c in every if c.id in others}
    archives = any(c.package_type == "libtorch" for c in every)  # else a *.zip is none of ours
    return _Expected(
        every=every, cells=cells, others=others, other_names=other_names, archives=archives
    )


def _collect_artifacts(
    request: ReleaseRequest,
    manifest: ArtifactManifest | None,
    expected: _Expected,
    tmp: Path,
) -> list[Artifact]:
    """The artifacts of the source, without those of the cells left alone."""
    source = request.source
    if source.dist is not None:
        if not source.dist.is_dir():
            raise UsageError(f"{source.dist}: not a directory", key="--dist")
        zips = source.dist.glob("*.zip") if expected.archives else ()
        return [
            Artifact(path=p)
            for p in sorted([*source.dist.glob("*.whl"), *zips])
            if p.name not in expected.other_names
        ]
    if manifest is not None and source.manifest_path is not None:
        if manifest.release != request.release or manifest.channel != request.channel:
            raise UsageError(
                f"{source.manifest_path} is for release {manifest.release} on "
                f"{manifest.channel}, not {request.release} on {request.channel}",
                key="--manifest",
            )
        base = source.manifest_path.parent
        return [
            Artifact(path=base / e.file, cell_id=e.cell_id)
            for e in manifest.entries.values()
            if e.cell_id not in expected.others
        ]
    from relforge.validate.fetch import fetch_from_index

    assert source.index_url is not None
    project = request.matrix.project.name
    wanted = {expected_filename(c, project) for c in expected.cells}
    return fetch_from_index(source.index_url, project, wanted, tmp)


def write_verdicts(manifest: ArtifactManifest, path: Path, report: ValidationReport) -> None:
    """Record each checked artifact's verdicts on its manifest entry, replacing those of any
    earlier run (the manifest holds each artifact's latest validation), and save it."""
    for entry in report.artifacts:
        if entry.cell_id and entry.cell_id in manifest.entries and entry.file:
            manifest = manifest.with_validation(entry.cell_id, entry.verdicts, entry.proven)
    manifest.save(path)


def build_date(manifest: ArtifactManifest) -> datetime.date | None:
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
