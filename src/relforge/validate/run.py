"""Validate a release's artifacts against its cells: bind files to cells, run the static checks
(in parallel), the release-wide checks and, when asked, the runtime checks."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from relforge.manifest import Verdict
from relforge.matrix.cell import Cell
from relforge.matrix.schema import Matrix, Release
from relforge.matrix.wheeltags import cell_tags
from relforge.validate.archive import archive_platform_tags
from relforge.validate.archivechecks import validate_archive
from relforge.validate.cellmatch import Artifact, bind, expected_filename
from relforge.validate.checklist import Expectation, check_artifact
from relforge.validate.devicechecks import device_files
from relforge.validate.facts import WheelFacts, gather
from relforge.validate.providers import DependencyWheel, read_dependencies
from relforge.validate.report import ArtifactReport, ValidationReport
from relforge.validate.runtime import RuntimeRequest, run_runtime
from relforge.validate.wheelchecks import (
    DUPLICATE,
    EXTRA,
    INDEX_HASH,
    MISSING,
    PYPI_CONSISTENT,
)


@dataclass(frozen=True, kw_only=True)
class Options:
    runtime: bool = False
    runtime_index: str | None = field(
        default=None,
        metadata={"doc": "index of the wheels' dependencies at runtime (an upstream, or the one "
                  "validated); the wheel itself always comes from its file"},
    )  # fmt: skip
    mirrored: Mapping[str, str] = field(
        default_factory=dict,
        metadata={"doc": "channel folder → index URL of its mirrored closure (deps mirror), "
                  "used when no runtime_index is given"},
    )  # fmt: skip
    size_limit_mb: int | None = None
    namespaces: tuple[str, ...] = ()
    jobs: int = 2
    workdir: Path | None = None
    dependencies: tuple[Path, ...] = ()  # `--with`: dependency wheels for RF-V041 and RF-V046
    require_gpu: bool = False  # `--require-gpu`: a CUDA cell's GPU checks fail without a GPU


def managed_names(all_cells: Sequence[Cell]) -> frozenset[str]:
    """Distributions some cell of the release pins: only the cell's own may appear in a wheel."""
    return frozenset(
        canonicalize_name(Requirement(text).name)
        for cell in all_cells
        for text in cell.extra_install_requires
    )


def validate_artifacts(
    matrix: Matrix,
    release: Release,
    channel: str,
    cells: Sequence[Cell],
    artifacts: Sequence[Artifact],
    options: Options,
    *,
    managed: frozenset[str] = frozenset(),
    skipped: Mapping[str, str] | None = None,
    every: Sequence[Cell] = (),
) -> ValidationReport:
    """Every check on every artifact; the report holds one entry per cell and per stray file.
    A cell of `skipped` (cell id → why its build skipped it) without a file is reported as
    skipped, not missing.  `every`: all the release's cells (default: `cells`), for the hints."""
    project = matrix.project.name
    limit_mb = options.size_limit_mb or matrix.project.size_limit_mb
    binding = bind(cells, artifacts, project)
    dependencies = read_dependencies(options.dependencies, jobs=options.jobs)
    rules = Expectation(
        project=project,
        requires_python=release.python_specifier,
        managed=managed,
        size_limit=limit_mb * 1_000_000,
        namespaces=options.namespaces,
        dependencies=dependencies,
    )
    reports: list[ArtifactReport] = []
    facts_by_cell: dict[str, WheelFacts] = {}
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for cell in cells:
            bound = binding.by_cell.get(cell.id, [])
            why = (skipped or {}).get(cell.id) if not bound else None
            if why is not None:
                reports.append(_skipped_report(cell, why))
                continue
            reports += _cell_reports(release, cell, bound, rules, pool, facts_by_cell)
        for artifact in binding.extra:
            reports.append(_extra_report(artifact, every or cells, dependencies, pool))
    reports = _with_pypi_consistency(reports, cells, facts_by_cell)
    if options.runtime:
        reports = _with_runtime(
            reports, cells, binding.by_cell, project, matrix, options, facts_by_cell
        )
    return ValidationReport(
        project=project, release=release.name, channel=channel, artifacts=tuple(reports)
    )


def _cell_reports(
    release: Release,
    cell: Cell,
    bound: Sequence[Artifact],
    rules: Expectation,
    pool: ThreadPoolExecutor,
    facts_by_cell: dict[str, WheelFacts],
) -> list[ArtifactReport]:
    """The reports of the artifacts bound to one cell (one "missing" report when none is);
    records the first artifact's facts in `facts_by_cell`."""
    assert rules.project is not None
    want = expected_filename(cell, rules.project)
    if not bound:
        return [
            ArtifactReport(
                subject=cell.id,
                cell_id=cell.id,
                file=None,
                verdicts=(MISSING.verdict("fail", f"no artifact; expected {want}"),),
            )
        ]
    reports = []
    for artifact in bound:
        expect = dataclasses.replace(rules, cell=cell)
        if cell.package_type == "archive":
            tags = archive_platform_tags(release, cell)
            static = validate_archive(artifact.path, expect, tags, pool)
        else:
            facts = gather(artifact.path, pool, verify_digests=True, symbols=True)
            facts_by_cell.setdefault(cell.id, facts)
            static = check_artifact(facts, expect)
        verdicts = [
            _named(artifact, want, cell),
            *(
                [
                    DUPLICATE.verdict(
                        "fail",
                        f"{len(bound)} artifacts: " + ", ".join(a.path.name for a in bound),
                    )
                ]
                if len(bound) > 1
                else [DUPLICATE.verdict("pass")]
            ),
            *static,
            *_index_verdicts(artifact),
        ]
        reports.append(
            ArtifactReport(
                subject=cell.id,
                cell_id=cell.id,
                file=artifact.path.name,
                verdicts=tuple(verdicts),
            )
        )
    return reports


def _skipped_report(cell: Cell, why: str) -> ArtifactReport:
    """A cell the build skipped (the manifest says why): no file, nothing failed."""
    return ArtifactReport(
        subject=cell.id,
        cell_id=cell.id,
        file=None,
        verdicts=(MISSING.verdict("skip", f"the build skipped this cell: {why}"),),
    )


def _extra_report(
    artifact: Artifact,
    cells: Sequence[Cell],
    dependencies: tuple[DependencyWheel, ...],
    pool: ThreadPoolExecutor,
) -> ArtifactReport:
    """A file no cell of the release expects: a failure, with the checks that need no cell."""
    stray = Expectation(dependencies=dependencies)
    why = (
        f"the manifest's cell {artifact.cell_id} is not a cell of this release"
        if artifact.cell_id
        else "no cell of the release expects this file"
    )
    why += _other_version(artifact.path.name, cells)
    floor = abi3_tag(artifact.path.name)
    declared = [c.id for c in cells if c.abi_tag == "abi3" and c.python_tag == floor]
    if floor and declared:  # the matrix says abi3 now: the file is of a cell it no longer has
        why += (
            f"; {declared[0]} builds its {floor}-abi3 wheel now: rebuild it (`relforge build` "
            "replaces the manifest's entries of cells the matrix no longer has)"
        )
    elif floor:  # the usual cause: a project building abi3 wheels, a matrix that does not say so
        why += (
            f'; it is an abi3 wheel ({floor}-abi3): declare `abi3: "{floor[2]}.{floor[3:]}"` '
            "on its variant (or release) so that one cell expects it for every Python"
        )
    return ArtifactReport(
        subject=artifact.path.name,
        cell_id=None,
        file=artifact.path.name,
        verdicts=(
            EXTRA.verdict("fail", why),
            *(
                validate_archive(artifact.path, stray, (), pool)
                if artifact.path.suffix == ".zip"
                else check_artifact(
                    gather(artifact.path, pool, verify_digests=True, symbols=True), stray
                )
            ),
        ),
    )


def _other_version(file_name: str, cells: Sequence[Cell]) -> str:
    """The hint for a wheel with a cell's tags and another version: most often one built for
    another channel (a dev build validated as nightly)."""
    try:
        _, version, _, tags = parse_wheel_filename(file_name)
    except InvalidWheelFilename:
        return ""
    for cell in cells:
        if cell.package_type == "wheel" and cell_tags(cell) == {str(t) for t in tags}:
            return (
                f"; it has cell {cell.id}'s tags but version {version}, where this channel's "
                f"is {cell.version}: validate with the --channel it was built for (dev "
                "X.Y.Z.dev0, nightly X.Y.Z.devYYYYMMDD, test X.Y.Z), or with --manifest, "
                "which knows it"
            )
    return ""


def abi3_tag(file_name: str) -> str | None:
    """`cp39` for a `…-cp39-abi3-….whl` file name, else None."""
    try:
        tags = parse_wheel_filename(file_name)[3]
    except InvalidWheelFilename:
        return None
    return next((t.interpreter for t in tags if t.abi == "abi3"), None)


def _named(artifact: Artifact, want: str, cell: Cell) -> Verdict:
    """RF-V100 on a bound file: a wheel's name is its tags; an archive's is a convention, so a
    manifest may bind one of another name."""
    if artifact.path.name == want:
        return MISSING.verdict("pass", want)
    if cell.package_type == "archive" and artifact.cell_id == cell.id:
        return MISSING.verdict("pass", f"{artifact.path.name} (the manifest's; by name: {want})")
    return MISSING.verdict("fail", f"{artifact.path.name} should be named {want}")


def _index_verdicts(artifact: Artifact) -> list[Verdict]:
    if not artifact.from_index:
        return []
    if artifact.index_sha256 is None:
        return [INDEX_HASH.verdict("fail", "the index links the file without #sha256=")]
    if artifact.index_sha256 != artifact.sha256:
        return [
            INDEX_HASH.verdict(
                "fail", f"index says sha256 {artifact.index_sha256}, the file is {artifact.sha256}"
            )
        ]
    return [INDEX_HASH.verdict("pass", artifact.index_sha256)]


def _with_pypi_consistency(
    reports: list[ArtifactReport], cells: Sequence[Cell], facts: dict[str, WheelFacts]
) -> list[ArtifactReport]:
    """RF-V103 on every PyPI-bound wheel: the same metadata as the first of them."""
    bound = [c.id for c in cells if c.pypi_default and c.id in facts and facts[c.id].error is None]
    if len(bound) < 2:
        return reports
    first = facts[bound[0]]

    def shape(f: WheelFacts) -> tuple[object, ...]:
        return (
            sorted(str(r) for r in f.requires_dist),
            str(f.requires_python),
            sorted(f.classifiers),
        )

    verdicts: dict[str, Verdict] = {}
    for cell_id in bound:
        mine = facts[cell_id]
        differ = [
            label
            for label, a, b in zip(
                ("Requires-Dist", "Requires-Python", "classifiers"),
                shape(mine),
                shape(first),
                strict=True,
            )
            if a != b
        ]
        verdicts[cell_id] = (
            PYPI_CONSISTENT.verdict(
                "fail", f"{', '.join(differ)} differ from {first.file_name} (bound for PyPI too)"
            )
            if differ
            else PYPI_CONSISTENT.verdict("pass", f"same as the other {len(bound) - 1}")
        )
    return [
        _add(r, [verdicts[r.cell_id]]) if r.cell_id in verdicts and r.file else r for r in reports
    ]


def _with_runtime(
    reports: list[ArtifactReport],
    cells: Sequence[Cell],
    by_cell: dict[str, list[Artifact]],
    project: str,
    matrix: Matrix,
    options: Options,
    facts_by_cell: Mapping[str, WheelFacts],
) -> list[ArtifactReport]:
    by_id = {c.id: c for c in cells}
    owned = options.workdir is None
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="relforge-runtime-"))
    out = []
    try:
        for report in reports:
            cell = by_id.get(report.cell_id or "")
            artifacts = by_cell.get(report.cell_id or "", [])
            if cell is None or report.file is None or not artifacts or cell.package_type != "wheel":
                out.append(report)
                continue
            artifact = next(a for a in artifacts if a.path.name == report.file)
            index, source = dependency_index(cell, options)
            facts = facts_by_cell.get(cell.id)
            build = matrix.project.build
            request = RuntimeRequest(
                cell=cell,
                wheel=artifact.path,
                project=project,
                module=matrix.project.import_name,
                workdir=workdir,
                dependency_index=index,
                dependency_source=source,
                smoke=build.smoke,
                device=dict(device_files(facts)) if facts is not None else {},
                gpu_smoke=build.gpu_smoke,
                gpu_smoke_timeout=float(build.gpu_smoke_timeout),
                require_gpu=options.require_gpu,
            )
            result = run_runtime(request)
            out.append(dataclasses.replace(_add(report, result.verdicts), proven=result.proven))
    finally:
        if owned:
            shutil.rmtree(workdir, ignore_errors=True)
    return out


def dependency_index(cell: Cell, options: Options) -> tuple[str | None, str]:
    """Where a cell's dependencies come from at runtime, and how to name it: the index given,
    else the mirrored closure of the cell's channel folder, else none."""
    if options.runtime_index:
        return options.runtime_index, options.runtime_index
    folder = (cell.upload_prefix or "").strip("/")
    if folder in options.mirrored:
        return options.mirrored[folder], f"the channel's mirrored closure in {folder}/"
    return None, ""


def _add(report: ArtifactReport, verdicts: Sequence[Verdict]) -> ArtifactReport:
    return dataclasses.replace(report, verdicts=(*report.verdicts, *verdicts))
