"""Which architectures of each CUDA cell a kernel has run on: the arch list against the GPUs its
validations recorded (`ManifestEntry.proven_on`, from RF-R006).

An entry `X.Y` (`9.0a`, `10.0f` alike) is proven by a GPU of compute capability X.Y: its SASS
is what such a GPU runs.  The rest have shipped without any validation executing them — what
`release audit --manifest` lists (PyTorch ships sm_100/sm_120 code its validation never runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relforge.manifest import ArtifactManifest, ProvenGpu
from relforge.matrix.archlist import parse_cuda_arch
from relforge.matrix.cell import Cell


@dataclass(frozen=True, kw_only=True)
class CellCoverage:
    cell_id: str
    arches: tuple[str, ...]  # sm_XY of every arch list entry
    proven_on: tuple[ProvenGpu, ...]
    unproven: tuple[str, ...]
    built: bool  # the manifest has an artifact for the cell

    def to_json(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "arches": list(self.arches),
            "proven_on": [g.to_json() for g in self.proven_on],
            "unproven": list(self.unproven),
            "built": self.built,
        }


def gpu_coverage(cells: Sequence[Cell], manifest: ArtifactManifest) -> list[CellCoverage]:
    """One coverage per CUDA cell with an arch list, in the cells' order."""
    out = []
    for cell in cells:
        if cell.accelerator != "cuda" or not cell.cuda_arch_list:
            continue
        arches = tuple(
            dict.fromkeys(a.sass for a in map(parse_cuda_arch, cell.cuda_arch_list) if a)
        )
        entry = manifest.entries.get(cell.id)
        proven = entry.proven_on if entry is not None else ()
        ran = {g.sm for g in proven}
        out.append(
            CellCoverage(
                cell_id=cell.id,
                arches=arches,
                proven_on=proven,
                unproven=tuple(a for a in arches if a.rstrip("af") not in ran),
                built=entry is not None,
            )
        )
    return out


def coverage_lines(coverage: Sequence[CellCoverage]) -> list[str]:
    """What people read: each CUDA cell, the GPUs that ran it and what none has executed."""
    if not coverage:
        return ["  no CUDA cell with an arch list"]
    out = []
    for c in coverage:
        ran = ", ".join(f"{g.name} ({g.sm})" for g in c.proven_on) or "no GPU yet"
        gap = ", ".join(c.unproven) if c.unproven else "none"
        state = "" if c.built else " (not built)"
        out.append(f"  {c.cell_id}{state}: kernels ran on {ran}; never executed: {gap}")
    return out
