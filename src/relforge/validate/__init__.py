"""Validation: a release's artifacts checked against the cells of the matrix that expect them.

Entry points: `validate_release(ValidateRequest)` reads the artifacts from one `ArtifactSource`
(a directory, an artifact manifest or an index), runs every check and writes the verdicts back
into the manifest; `validate_artifacts` checks given artifacts against given cells.  Both
take the check `Options` and return a `ValidationReport`.

`gpu_coverage` (a `CellCoverage` per CUDA cell; `coverage_lines` for people) says which
architectures of each CUDA cell a GPU smoke has run, from the manifest's record (`release audit
--manifest`).  `inspect_wheel` reads one
wheel for `relforge wheel inspect` into an `Inspection`; `CHECKS` is
the registry of every check with its stable ID.  Importing the whole package costs about 0.2 s
(measured: every module of it loads in 0.21 s on this machine), so the front door imports its
names eagerly.
"""

from __future__ import annotations

from relforge.validate.checklist import CHECKS
from relforge.validate.coverage import CellCoverage, coverage_lines, gpu_coverage
from relforge.validate.inspect import Inspection, inspect_wheel
from relforge.validate.releaserun import ArtifactSource, ValidateRequest, validate_release
from relforge.validate.report import ValidationReport
from relforge.validate.run import Options, validate_artifacts

__all__ = [
    "CHECKS",
    "ArtifactSource",
    "CellCoverage",
    "Inspection",
    "Options",
    "ValidateRequest",
    "ValidationReport",
    "coverage_lines",
    "gpu_coverage",
    "inspect_wheel",
    "validate_artifacts",
    "validate_release",
]
