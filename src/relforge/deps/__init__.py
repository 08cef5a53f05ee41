"""Dependency closure of a channel: every wheel folder holds what its cells need to install.

- `relforge.deps.mirror.plan_mirror` / `apply_mirror`: resolve each cell's published wheel with
  pip against an upstream index and copy the closure (verified, recorded, indexed).
- `relforge.deps.check.check_channel`: pip resolves each cell from its folder index alone.
- `relforge.promote.deps_record`: the record of mirrored files (`relforge/deps/<folder>.json`).
"""

from __future__ import annotations

from relforge.deps.check import check_channel
from relforge.deps.closure import Closure, mirrored_closure
from relforge.deps.manifest import built_wheels
from relforge.deps.mirror import apply_mirror, plan_mirror, render_mirror

__all__ = [
    "Closure",
    "apply_mirror",
    "built_wheels",
    "check_channel",
    "mirrored_closure",
    "plan_mirror",
    "render_mirror",
]
