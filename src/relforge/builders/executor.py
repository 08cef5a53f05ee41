"""Run a build plan: cells in parallel, each reused from the cache when nothing it depends on
changed, each with its own log; one failing cell never stops the others.  The results become
manifest entries (relforge.builders.manifestfile writes them)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from relforge import __version__
from relforge.builders.artifacts import (
    SOURCE_FOLDER,
    ArtifactProblem,
    RepairPolicy,
    check_archive_name,
    check_search_paths,
    check_wheel,
    declare_requirements,
    pick_artifact,
    repair_policy,
    restamp,
    source_folder,
    version_env,
)
from relforge.builders.backends import (
    AXIS_WHEELS,
    CACHED,
    STAMPING,
    Builder,
    BuildJob,
    output_files,
)
from relforge.builders.buildplan import BuildPlan
from relforge.builders.cache import BuildCache, CachedArtifact, cache_key
from relforge.builders.control import BuildFailure, CellSkipped, cancel, cancel_all
from relforge.builders.inputs import DependencyWheels, SourceTree, fetch_axis_wheels, scan_source
from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import ConfigError, RelforgeError
from relforge.manifest import ManifestEntry, sha256_file
from relforge.matrix.archivenames import archive_filename
from relforge.matrix.cell import Cell

CellStatus = Literal["built", "cached", "failed", "skipped"]


@dataclass(frozen=True, kw_only=True)
class CellResult:
    cell: Cell
    status: CellStatus
    builder: str
    seconds: float = 0.0
    reason: str = ""
    artifact: Path | None = None  # in the output folder
    size: int | None = None
    sha256: str | None = None
    log: Path | None = None
    entry: ManifestEntry | None = None


class Reporter(Protocol):
    def started(self, cell: Cell, builder: str) -> None: ...

    def phase(self, cell: Cell, name: str) -> None:
        """The cell's build entered step `name` (relforge.builders.backends.base names them)."""

    def finished(self, result: CellResult) -> None: ...


def run_build(
    plan: BuildPlan, builders: Mapping[str, Builder], reporter: Reporter
) -> list[CellResult]:
    """Build every cell of the plan with its builder (cell id → builder); results in plan order."""
    run = _Run(plan, builders, reporter)
    cancel.reset()
    _writable(plan.out, "--out")
    _writable(run.logs, "logs")
    pool = ThreadPoolExecutor(max_workers=plan.jobs, thread_name_prefix="relforge-build")
    try:
        futures = [pool.submit(run.cell, cell) for cell in plan.cells]
        return [future.result() for future in futures]
    except BaseException:  # interrupted: start nothing new, stop what runs
        pool.shutdown(wait=False, cancel_futures=True)
        cancel_all()
        raise
    finally:
        pool.shutdown(wait=True)
        run.cleanup()
        cancel.reset()  # every build thread has stopped: the interrupt ends with this run


def _writable(folder: Path, key: str) -> None:
    """Make `folder` and check that files can be written in it, before any build starts."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        if is_environment_fault(exc):  # read-only, full, not permitted: exit 6, not 2
            raise environment_fault(exc, f"cannot write to {folder}", key) from None
        raise ConfigError(
            f"cannot write to {folder}: {exc.strerror or exc}",
            key=key,
            hint="pick a folder relforge can create and write"
            + (" (--out DIR)" if key == "--out" else " (run from a writable directory)"),
        ) from None


class _Run:
    def __init__(self, plan: BuildPlan, builders: Mapping[str, Builder], reporter: Reporter):
        self.plan = plan
        self.builders = builders
        self.reporter = reporter
        self.cache = BuildCache(plan.state / "cache")
        self.logs = plan.state / "logs"
        self._lock = threading.RLock()  # snapshot() holds it while it calls scratch()
        self._tree: SourceTree | None = None
        self._snapshot: Path | None = None
        self._scratch: Path | None = None

    def tree(self) -> SourceTree:
        with self._lock:
            if self._tree is None:
                self._tree = scan_source(self.plan.source, leave_out=self.plan.not_source)
            return self._tree

    def snapshot(self) -> Path:
        """One copy of the source per run, shared read-only by every cell's build."""
        tree = self.tree()
        with self._lock:
            if self._snapshot is None:
                self._snapshot = tree.snapshot(self.scratch() / "source")
            return self._snapshot

    def scratch(self) -> Path:
        """The run's scratch folder, made by the first cell that asks (cells ask at once)."""
        with self._lock:
            if self._scratch is None:
                root = self.plan.state / "work"
                root.mkdir(parents=True, exist_ok=True)
                self._scratch = Path(tempfile.mkdtemp(prefix="run-", dir=root))
            return self._scratch

    def cleanup(self) -> None:
        with self._lock:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)

    def cell(self, cell: Cell) -> CellResult:
        builder = self.builders[cell.id]
        why = builder.unsatisfied(cell)
        if why is not None:
            result = CellResult(cell=cell, status="skipped", builder=builder.name, reason=why)
            self.reporter.finished(result)
            return result
        self.reporter.started(cell, builder.name)
        start = time.monotonic()
        log = self.logs / f"{cell.id}.log"
        try:
            result = self._build(cell, builder, log, start)
        except CellSkipped as exc:
            result = CellResult(cell=cell, status="skipped", builder=builder.name, reason=str(exc))
        except (BuildFailure, ArtifactProblem) as exc:
            result = self._failed(cell, builder, log, start, str(exc))
        except RelforgeError as exc:
            result = self._failed(cell, builder, log, start, exc.message)
        except Exception as exc:  # a bug in relforge: this cell fails, the others go on
            if is_environment_fault(exc):  # a read-only or full disk: the run stops (exit 6)
                assert isinstance(exc, OSError)
                raise environment_fault(exc, f"{cell.id}: cannot write the build's files") from None
            with log.open("a", encoding="utf-8") as fh:
                traceback.print_exc(file=fh)
            result = self._failed(cell, builder, log, start, f"internal error: {exc!r}")
        self.reporter.finished(result)
        return result

    def _failed(
        self, cell: Cell, builder: Builder, log: Path, start: float, reason: str
    ) -> CellResult:
        return CellResult(
            cell=cell,
            status="failed",
            builder=builder.name,
            seconds=time.monotonic() - start,
            reason=reason,
            log=log,
        )

    def _build(self, cell: Cell, builder: Builder, log: Path, start: float) -> CellResult:
        plan = self.plan
        repair = self.repair(cell)
        if cell.axis_install:
            self.reporter.phase(cell, AXIS_WHEELS)
        deps = self._axis_wheels(cell, log)
        parts: dict[str, Any] = {
            "relforge": __version__,
            "builder": builder.name,
            "identity": dict(builder.identity(cell)),
            "cell": cell.to_json(),
            "command": list(plan.command_for(cell)),
            "source": self.tree().digest,
            "repair": repair.to_json() if repair else None,  # its tool, options and all
            "network": plan.network,
        }
        archive_name = None
        if cell.package_type != "wheel":  # the name the build must write is part of the output
            archive_name = archive_filename(plan.matrix, plan.release, cell, cell.version or "")
            parts["archive_name"] = archive_name
        if deps is not None:  # what `numpy>=2` resolved to decides the output too
            parts["axis_wheels"] = list(deps.files)
        key = cache_key(parts)
        hit = self.cache.get(key)
        if hit is not None:
            self.reporter.phase(cell, CACHED)
            return self._result(cell, builder, hit, key, cached=True, start=start)
        log.write_text(
            f"# relforge {__version__}: {cell.id} {cell.version} with the {builder.name} "
            f"builder\n# cache key {key}\n",
            encoding="utf-8",
        )
        work = Path(tempfile.mkdtemp(prefix=f"{cell.id}-", dir=self.scratch()))
        try:
            out = work / "artifact"
            out.mkdir()
            builder.build(self._job(cell, work, out, log, repair, deps))
            self.reporter.phase(cell, STAMPING)
            artifact = pick_artifact(output_files(out), cell)
            restamped = None
            if cell.package_type == "wheel":
                restamped = restamp(artifact, cell.version or "")
                artifact = restamped.path if restamped else artifact
            added = declare_requirements(artifact, cell)
            if cell.package_type == "wheel":
                check_wheel(
                    artifact, cell, project=plan.matrix.project.name, version=cell.version or ""
                )
                check_search_paths(artifact)
            elif archive_name is not None:
                check_archive_name(artifact, archive_name)
            info = {
                "builder": builder.name,
                "image": cell.image if builder.name == "docker" else None,
                "identity": parts["identity"],
                "seconds": round(time.monotonic() - start, 3),
                "source_digest": parts["source"],
                "cache_key": key,
                "relforge_version": __version__,
                "version_origin": plan.base.origin,
                "requires_dist_added": added,
            }
            if restamped is not None:  # the build wrote the project's own version
                info["version_stamped_from"] = restamped.built
                _note(log, f"the wheel said {restamped.built}: renamed to {cell.version}")
            stored = self.cache.put(key, artifact, info)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return self._result(cell, builder, stored, key, cached=False, start=start)

    def repair(self, cell: Cell) -> RepairPolicy | None:
        """The cell's repair, with its platform's `repair_options` from the matrix."""
        options = self.plan.release.platforms[cell.platform].repair_options
        return repair_policy(cell, options)

    def _axis_wheels(self, cell: Cell, log: Path) -> DependencyWheels | None:
        """The wheels of the cell's dependency axes, fetched on the host (cached)."""
        if not cell.axis_install:
            return None
        log.parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{cell.id}-axes-", dir=self.scratch()))
        return fetch_axis_wheels(
            cell, folder, env={}, log=log, deadline=time.monotonic() + self.plan.timeout_s
        )

    def _job(
        self,
        cell: Cell,
        work: Path,
        out: Path,
        log: Path,
        repair: RepairPolicy | None,
        deps: DependencyWheels | None = None,
    ) -> BuildJob:
        plan = self.plan
        version = cell.version or ""
        wheel = cell.package_type == "wheel"
        env = {
            **(repair.env if repair else {}),  # MACOSX_DEPLOYMENT_TARGET; the matrix's env wins
            **cell.env,
            **(version_env(plan.matrix.project.name, version) if wheel else {}),
            "RELFORGE_VERSION": version,
            plan.matrix.project.build.version_env: version,
            "RELFORGE_CHANNEL": plan.channel,
            "MAX_JOBS": str(plan.max_jobs),
        }
        if cell.package_type != "wheel":  # the one name the archive may have
            env["RELFORGE_ARCHIVE_NAME"] = archive_filename(
                plan.matrix, plan.release, cell, version
            )
        return BuildJob(
            cell=cell,
            command=plan.command_for(cell),
            env=env,
            source=self.snapshot(),
            work=work,
            out=out,
            log=log,
            timeout_s=plan.timeout_s,
            repair=repair,
            dependencies=deps,
            source_folder=source_folder(self.plan.source, version) if wheel else SOURCE_FOLDER,
            phase=lambda name: self.reporter.phase(cell, name),
        )

    def _result(
        self,
        cell: Cell,
        builder: Builder,
        stored: CachedArtifact,
        key: str,
        *,
        cached: bool,
        start: float,
    ) -> CellResult:
        target = _publish(stored, self.plan.out)
        log = self.logs / f"{cell.id}.log"
        build = {**stored.info, "cached": cached, "log": str(log)}
        entry = ManifestEntry(
            cell_id=cell.id,
            file=target.name,
            size=stored.size,
            sha256=stored.sha256,
            version=cell.version or "",
            package_type=cell.package_type,
            variant=cell.variant,
            upload_subfolder=cell.upload_subfolder,
            platform_tag=cell.platform_tag,
            python=cell.python,
            build=build,
        )
        return CellResult(
            cell=cell,
            status="cached" if cached else "built",
            builder=builder.name,
            seconds=time.monotonic() - start,
            artifact=target,
            size=stored.size,
            sha256=stored.sha256,
            log=log,
            entry=entry,
        )


def _note(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"# relforge: {line}\n")


def _publish(stored: CachedArtifact, out: Path) -> Path:
    """Copy a cached artifact into the output folder (kept when an identical file is there)."""
    target = out / stored.path.name
    if (
        target.is_file()
        and target.stat().st_size == stored.size
        and sha256_file(target) == stored.sha256
    ):
        return target
    tmp = out / f".{target.name}.tmp"
    shutil.copyfile(stored.path, tmp)
    tmp.replace(target)
    return target
