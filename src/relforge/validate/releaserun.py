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
from relforge.manifest import ArtifactManifest, load_manifest, manifest_target
from relforge.matrix.cell import Cell
from relforge.matrix.expand import AnyChannel, stamped_cells
from relforge.matrix.schema import Matrix
from relforge.matrix.selector import Selector
from relforge.validate.cellmatch import Artifact, expected_filename
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

    def target(
        self, matrix: Matrix, release: str | None, channel: AnyChannel | None, *, whole: bool
    ) -> tuple[str, AnyChannel]:
        """The release and channel to validate: a manifest's own unless given (a different
        one given is a UsageError naming the manifest's); else `--release` (required) and the
        channel given, or the matrix's channels.default."""
        if self.manifest_path is not None:
            manifest = load_manifest(self.manifest_path)
            found, on = manifest_target(
                manifest,
                self.manifest_path,
                release=release,
                channel=channel,
                matrix_file=matrix.file or "FILE",
            )
            return found, _any_channel(on, self.manifest_path)
        if whole:
            raise UsageError(
                "--whole goes with --manifest",
                key="--whole",
                hint="--dist and --index always expect every selected cell of the release",
            )
        if release is None:
            raise UsageError(
                "which release? pass --release X.Y (with --manifest, the manifest's is taken)",
                key="--release",
            )
        return release, channel or matrix.channels.default


def _any_channel(text: str, path: Path) -> AnyChannel:
    match text:
        case "nightly" | "test" | "release" | "dev":
            return text
    raise UsageError(
        f"{path} is for channel {text!r}, which no relforge command builds",
        key="--manifest",
        hint="build it again: relforge build FILE --release X.Y",
    )


@dataclass(frozen=True, kw_only=True)
class ValidateRequest:
    """One `relforge validate` run: the release's selected wheel cells against one source."""

    matrix: Matrix
    release: str
    channel: AnyChannel  # dev: a local build's manifest, versions of the dev scheme
    source: ArtifactSource
    selectors: Sequence[Selector] = ()
    whole: bool = False  # a manifest source: also expect the selected cells it does not hold
    date: datetime.date | None = None  # of nightly versions; default: the manifest's, else today
    options: Options = field(default_factory=Options)  # its workdir is set per run


@dataclass(frozen=True, kw_only=True)
class _Expected:
    every: list[Cell]  # every cell of the release
    cells: list[Cell]  # the selected wheel cells (of a manifest: those it holds, unless whole)
    others: set[str]  # ids of the cells left alone
    other_names: set[str]  # file names of the artifacts of those cells
    archives: bool  # the release has archive cells (else a *.zip is none of ours)


def validate_release(request: ValidateRequest) -> ValidationReport:
    """Check the artifacts of `request.source` against the release's selected wheel cells;
    a manifest source gets each artifact's verdicts written back.  The caller decides what the
    report's failures mean (the CLI exits 4)."""
    from relforge.wheelformat import WheelError

    source = request.source
    manifest = load_manifest(source.manifest_path) if source.manifest_path is not None else None
    if manifest is not None and source.manifest_path is not None:
        manifest_target(
            manifest,
            source.manifest_path,
            release=request.release,
            channel=request.channel,
            matrix_file=request.matrix.file or "FILE",
        )
    date = request.date
    if date is None and manifest is not None:
        date = build_date(manifest)  # a nightly validated after midnight keeps its build's day
    expected = _expected_cells(request, manifest, date)
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
                # --whole: a cell the build skipped is missing like one it never built
                skipped=manifest.skipped if manifest is not None and not request.whole else {},
                every=expected.every,
            )
        except WheelError as exc:
            raise UsageError(str(exc), key="--with") from None
    if manifest is not None and source.manifest_path is not None:
        write_verdicts(manifest, source.manifest_path, report)
    return report


def _expected_cells(
    request: ValidateRequest, manifest: ArtifactManifest | None, date: datetime.date | None
) -> _Expected:
    """The release's cells, the selected wheel cells among them, and the others.  Of a
    manifest, the selected cells it holds (built or skipped), unless the request is `whole`."""
    matrix, release, channel = request.matrix, request.release, request.channel
    every = stamped_cells(matrix, release, channel, date=date)
    cells = [
        c
        for c in stamped_cells(
            matrix, release, channel, date=date, selectors=list(request.selectors)
        )
        if c.package_type == "wheel"
        or request.source.index_url is None  # an index serves no archives
    ]
    if not cells:
        raise NothingToDoError(f"no cell of release {release} is selected", key="--select")
    if manifest is not None and not request.whole:
        held = {*manifest.entries, *manifest.skipped}
        cells = [c for c in cells if c.id in held]
        if not cells:
            raise NothingToDoError(
                f"{request.source.manifest_path} holds no selected cell of release {release}",
                key="--manifest",
                hint="build the cells first (relforge build), or pass --whole to report each "
                "selected cell the manifest lacks as missing (RF-V100)",
            )
    # Artifacts of the release's other cells are left alone (not reported as strays).
    chosen = {c.id for c in cells}
    others = {c.id for c in every if c.id not in chosen}
    other_names = {expected_filename(c, matrix.project.name) for c in every if c.id in others}
    archives = any(c.package_type == "archive" for c in every)  # else a *.zip is none of ours
    return _Expected(
        every=every, cells=cells, others=others, other_names=other_names, archives=archives
    )


def _collect_artifacts(
    request: ValidateRequest,
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
