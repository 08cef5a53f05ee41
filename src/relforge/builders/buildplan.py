"""Resolve a `relforge build` request into a plan: which cells, stamped with which version,
from which source tree, into which folder — every check of the input happens here, before
anything is built or written."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from relforge.builders.version import (
    BuildChannel,
    VersionBase,
    release_refused,
    stamp_version,
    version_base,
)
from relforge.errors import ConfigError, NothingToDoError, RefusedError, UsageError
from relforge.manifest import MANIFEST_NAME, ArtifactManifest, load_manifest
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells, nightly_date
from relforge.matrix.schema import ChannelName, Matrix, Release
from relforge.matrix.selector import Selector


@dataclass(frozen=True, kw_only=True)
class Replaced:
    """The manifest of another project, release or channel in the output folder, which this
    build replaces; `keep`: where it is kept (it holds validated entries), else None."""

    manifest: ArtifactManifest
    keep: Path | None


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    matrix: Matrix
    release: Release
    channel: BuildChannel
    cells: tuple[Cell, ...]  # each with its stamped `version`
    source: Path
    base: VersionBase
    command: tuple[str, ...]  # of wheel cells (empty: the PEP 517 build)
    archive_command: tuple[str, ...]  # of native archive cells
    out: Path
    state: Path  # .relforge: logs, cache, scratch
    jobs: int
    max_jobs: int  # MAX_JOBS of each build
    timeout_s: float
    network: bool
    previous: ArtifactManifest | None  # the manifest already in `out`, merged into
    replaced: Replaced | None = None  # or the one of another release or channel it replaces
    release_cells: frozenset[str] = frozenset()  # ids of every cell of the release

    @property
    def manifest_path(self) -> Path:
        return self.out / MANIFEST_NAME

    @property
    def not_source(self) -> tuple[Path, ...]:
        """What relforge writes or reads next to the build's input, never part of it when it
        lies in the source tree: the output folder, the state folder (logs, cache, scratch)
        and the matrix file (its facts reach the build through the cell, not its bytes)."""
        matrix = (Path(self.matrix.file),) if self.matrix.file else ()
        return (self.out, self.state, *matrix)

    def summary(self) -> list[tuple[str, str]]:
        """The preamble printed before work starts."""
        return [
            ("project", f"{self.matrix.project.title} {self.release.name}"),
            (
                "channel",
                f"{self.channel} (version base {self.base.version} from {self.base.origin})",
            ),
            ("source", str(self.source)),
            ("command", " ".join(self.command) or "PEP 517 wheel build (pip wheel, offline)"),
            *(
                [("archive command", " ".join(self.archive_command))]
                if any(c.package_type != "wheel" for c in self.cells)
                else []
            ),
            ("cells", str(len(self.cells))),
            ("jobs", f"{self.jobs} in parallel, MAX_JOBS={self.max_jobs} each"),
            ("out", str(self.out) + self._replacing()),
        ]

    def _replacing(self) -> str:
        if self.replaced is None:
            return ""
        was = self.replaced.manifest
        kept = f", kept as {self.replaced.keep.name}" if self.replaced.keep else ""
        return f" (replaces its manifest of {was.release} on {was.channel}{kept})"

    def command_for(self, cell: Cell) -> tuple[str, ...]:
        """The argv that builds `cell`: the archive command for native archives."""
        return self.command if cell.package_type == "wheel" else self.archive_command


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """What `relforge build` asks for: the release's cells (by id or selector) of `matrix`
    (read from `matrix_file`), built for `channel` from `source` (default: the matrix's
    `project.build.source`, else the working directory) into `out`, with logs and cache in
    `state`."""

    matrix: Matrix
    matrix_file: str
    release: str
    channel: BuildChannel
    cell_ids: Sequence[str] = ()
    selectors: Sequence[Selector] = ()
    source: Path | None = None
    out: Path
    state: Path
    jobs: int | None = None
    tag: str | None = None
    network: bool = False


def plan_build(request: BuildRequest) -> BuildPlan:
    """What `relforge build` builds: the release's selected cells (by id or selector), each
    stamped with its `channel` version, the source tree, the parallelism, and where artifacts
    (`out`) and logs and cache (`state`) go.  Nothing is built or written here."""
    matrix, matrix_file, release = request.matrix, request.matrix_file, request.release
    channel, cell_ids, selectors = request.channel, request.cell_ids, request.selectors
    source, out, state, jobs = request.source, request.out, request.state, request.jobs
    tag, network = request.tag, request.network
    if channel == "release":
        raise release_refused()
    if cell_ids and selectors:
        raise UsageError("give --cell or --select, not both", key="--cell")
    rel = matrix.release(release)
    wire: ChannelName | None = None
    match channel:
        case "nightly" | "test":
            wire = channel
    cells = expand_cells(matrix, release, channel=wire, selectors=selectors)
    if cell_ids:
        cells = _pick(cells, cell_ids, matrix_file, release)
    if not cells:
        raise NothingToDoError(
            f"no cell of release {release} matches the selection", key="--select"
        )
    build = matrix.project.build
    archive_command = build.command_for("archive")
    missing = [c.id for c in cells if c.package_type != "wheel" and not archive_command]
    if missing:
        raise ConfigError(
            f"{missing[0]} is a native archive and the matrix names no build command for it",
            where=build.span,
            key="project.build.archive_command",
            hint="native archives need a build command that writes one zip to "
            "$RELFORGE_OUTPUT_DIR (project.build.archive_command)",
        )
    src = _source_dir(source, build.source, matrix_file)
    base = version_base(channel, matrix=matrix, release=rel, source=src, tag=tag)
    day = nightly_date()
    stamped = tuple(
        c.replace(
            version=stamp_version(
                channel,
                matrix=matrix,
                release=rel,
                base=base.version,
                local=c.local_version,
                date=day,
            )
        )
        for c in cells
    )
    jobs = jobs or os.cpu_count() or 1
    previous, replaced = _previous_manifest(out / MANIFEST_NAME, matrix, release, channel)
    return BuildPlan(
        matrix=matrix,
        release=rel,
        channel=channel,
        cells=stamped,
        source=src,
        base=base,
        command=build.command,
        archive_command=archive_command,
        out=out.resolve(),
        state=state.resolve(),
        jobs=jobs,
        max_jobs=build.max_jobs or max(1, (os.cpu_count() or 1) // min(jobs, len(stamped))),
        timeout_s=build.timeout_minutes * 60.0,
        network=network,
        previous=previous,
        replaced=replaced,
        release_cells=frozenset(c.id for c in expand_cells(matrix, release)),
    )


def _pick(cells: list[Cell], ids: Sequence[str], file: str, release: str) -> list[Cell]:
    by_id = {c.id: c for c in cells}
    for wanted in ids:
        if wanted not in by_id:
            close = difflib.get_close_matches(wanted, list(by_id), n=3)
            raise UsageError(
                f"release {release} has no cell {wanted!r}",
                key="--cell",
                hint=f"did you mean {', '.join(close)}?"
                if close
                else f"list the ids with: relforge matrix list {file} --release {release}",
            )
    return [by_id[i] for i in dict.fromkeys(ids)]


def _source_dir(flag: Path | None, configured: str, matrix_file: str) -> Path:
    if flag is not None:
        path = flag
    elif configured:
        anchor = Path(matrix_file).parent if Path(matrix_file).is_file() else Path.cwd()
        path = anchor / configured
    else:
        path = Path.cwd()
    if not path.is_dir():
        raise UsageError(
            f"source tree {path} is not a directory",
            key="--source" if flag is not None else "project.build.source",
            hint="pass --source DIR, or set project.build.source (relative to the matrix file)",
        )
    return path.resolve()


def _previous_manifest(
    path: Path, matrix: Matrix, release: str, channel: str
) -> tuple[ArtifactManifest | None, Replaced | None]:
    """The manifest in the output folder to merge into (same project, release and channel), or
    the one this build replaces.  One holding validated entries is kept beside it, as
    relforge-manifest.<release>-<channel>.json; when that name is taken the build is refused."""
    if not path.exists():
        return None, None
    previous = load_manifest(path)
    mine = (matrix.project.name, release, channel)
    theirs = (previous.project, previous.release, previous.channel)
    if mine == theirs:
        return previous, None
    validated = sum(e.validated for e in previous.entries.values())
    if not validated:
        return None, Replaced(manifest=previous, keep=None)
    keep = path.with_name(f"relforge-manifest.{previous.release}-{previous.channel}.json")
    if keep.exists():
        raise RefusedError(
            f"{path} holds {validated} validated entries of {theirs[0]} {theirs[1]} "
            f"({theirs[2]} channel), and {keep.name}, where a build of {mine[1]} ({mine[2]} "
            "channel) would keep them, exists already",
            key="--out",
            hint=f"build into another folder with --out, or move {keep} away first",
        )
    return None, Replaced(manifest=previous, keep=keep)
