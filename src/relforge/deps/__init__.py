"""Dependency closure of a channel: every wheel folder holds what its cells need to install.

- `plan_mirror` (the main store and a `MirrorRequest`) / `render_mirror`: resolve each cell's
  published (or, with `built_wheels`, built) wheel with pip against an upstream index, and
  compare the closure with the channel's folders; `relforge.deps.mirror.fetch` downloads and
  checks what is missing.  Writing it into the channel (with its record and pages) is
  `relforge.promote.apply_mirror`.
- `check_channel` (an echo and a `DepsCheckRequest`): pip resolves each cell from its folder
  index alone; `check_summary` is the line a passing check ends with.
- `mirrored_closure` (`Closure`): what a folder's record says was mirrored, for runtime validation.
- `relforge.deps.mirrorrecord`: the record of mirrored files (`relforge/deps/<folder>.json`), which
  the index reads to vouch for them.

This package reads the matrix and the stores (relforge.matrixstores), never promote.
"""

from __future__ import annotations

from relforge.deps.closure import Closure, mirrored_closure
from relforge.deps.installcheck import DepsCheckRequest, check_channel, check_summary
from relforge.deps.manifestwheels import built_wheels
from relforge.deps.mirror import MirrorRequest, plan_mirror, render_mirror

__all__ = [
    "Closure",
    "DepsCheckRequest",
    "MirrorRequest",
    "built_wheels",
    "check_channel",
    "check_summary",
    "mirrored_closure",
    "plan_mirror",
    "render_mirror",
]
