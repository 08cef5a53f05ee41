"""What every builder shares: the job it is given, the Protocol it satisfies, how it fails.

The build contract: relforge copies the source tree into a scratch folder, runs the project's
build command there with the cell's environment (DESIRED_PYTHON, DESIRED_CUDA, GPU_ARCH_TYPE,
GPU_ARCH_VERSION, PACKAGE_TYPE, the CUDA arch list, MAX_JOBS, RELFORGE_VERSION, RELFORGE_CELL_ID,
RELFORGE_EXTRA_INSTALL_REQUIRES, …) and `python` on PATH being the cell's interpreter, and
collects what the command wrote to $RELFORGE_OUTPUT_DIR.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from relforge.builders.artifacts import RepairPolicy
from relforge.builders.inputs import DependencyWheels
from relforge.matrix.cell import Cell

BuilderName = Literal["docker", "host"]
Phase = Callable[[str], None]  # told the name of each step a cell's build enters
BUILDER_NAMES: tuple[BuilderName, ...] = ("docker", "host")


def default_command(output_dir: str) -> tuple[str, ...]:
    """The PEP 517 wheel build of the source tree, offline, with the build environment as is."""
    return (
        "python",
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--wheel-dir",
        output_dir,
        ".",
    )


@dataclass(frozen=True, kw_only=True)
class BuildJob:
    """Everything one cell's build needs; the executor makes one per cell it builds."""

    cell: Cell  # stamped: cell.version is the version to build
    command: tuple[str, ...] = ()  # () means default_command()
    env: Mapping[str, str]  # the cell's env plus relforge's variables; no host paths
    source: Path  # the source snapshot (never written to)
    work: Path  # this cell's scratch folder (exists, empty, removed afterwards)
    out: Path  # where the builder leaves the finished artifact (exists, empty)
    log: Path
    timeout_s: float
    repair: RepairPolicy | None
    dependencies: DependencyWheels | None = None  # the wheels of the cell's dependency axes
    source_folder: str = "src"  # the name of the build's source copy (versioneer reads it)
    phase: Phase = field(default=lambda _name: None)  # the reporter's phase(cell, name)


class Builder(Protocol):
    """A place cells are built: a container engine, or the host itself."""

    name: BuilderName

    def check(self, cells: Sequence[Cell]) -> None:
        """Fail early (RelforgeError with a hint) when the builder cannot start at all."""

    def unsatisfied(self, cell: Cell) -> str | None:
        """Why this builder cannot build `cell` here (the cell is skipped), or None."""

    def identity(self, cell: Cell) -> Mapping[str, str]:
        """What, besides the source and the cell, decides the output (image id, compilers)."""

    def build(self, job: BuildJob) -> None:
        """Build `job.cell` and leave its artifact in `job.out`; raise BuildFailure or
        CellSkipped."""


# The steps of one cell's build, as the progress lines name them (relforge.builders.progress).
RESOLVING = "resolving build requirements"
AXIS_WHEELS = "fetching axis wheels"
STAMPING = "stamping"
CACHED = "cached"


def build_phase(job: BuildJob) -> str:
    """The name of the step that runs the build itself: `pip wheel` or the matrix's command."""
    return "build command" if job.command else "pip wheel"


def repair_phase(job: BuildJob) -> str:
    """`repair (auditwheel)`, `repair (delocate-wheel)`, `repair (delvewheel)`."""
    return f"repair ({job.repair.what.split()[0]})" if job.repair else "repair"


def output_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
