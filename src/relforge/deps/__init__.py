"""Dependency closure of a channel: every wheel folder holds what its cells need to install.

- `relforge.deps.mirror.plan_mirror` / `apply_mirror`: resolve each cell's published wheel with
  pip against an upstream index and copy the closure (verified, recorded, indexed).
- `relforge.deps.check.check_channel`: pip resolves each cell from its folder index alone.
- `relforge.promote.deps_record`: the record of mirrored files (`relforge/deps/<folder>.json`).
"""
