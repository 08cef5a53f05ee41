"""Validation: a release's artifacts checked against the cells of the matrix that expect them.

Entry points: `validate_release(ReleaseRequest)` reads the artifacts from one `ArtifactSource`
(a directory, an artifact manifest or an index), runs every check and writes the verdicts back
into the manifest; `validate_artifacts` checks given artifacts against given cells.  Both
take the check `Options` and return a `ValidationReport`.

The names are imported on first use: `relforge wheel inspect` reads one module of this package
and does not pay for the matrix expansion `validate_release` needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relforge.validate.release import ArtifactSource, ReleaseRequest, validate_release
    from relforge.validate.report import ValidationReport
    from relforge.validate.run import Options, validate_artifacts

_HOMES = {
    "ArtifactSource": "relforge.validate.release",
    "ReleaseRequest": "relforge.validate.release",
    "validate_release": "relforge.validate.release",
    "ValidationReport": "relforge.validate.report",
    "Options": "relforge.validate.run",
    "validate_artifacts": "relforge.validate.run",
}

__all__ = [
    "ArtifactSource",
    "Options",
    "ReleaseRequest",
    "ValidationReport",
    "validate_artifacts",
    "validate_release",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
