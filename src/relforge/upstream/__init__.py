"""Follow upstream: what a newer torch, numpy, CUDA or CPython asks of a release's matrix.

- `relforge.upstream.check.check_upstream`: one release against a PEP 503/691 index — new values
  of its dependency axes, pins that differ from the upstream wheel's own METADATA (PEP 658, or
  range requests into the wheel), yanked or missing pins, Pythons to add or drop — as a Report.
- `relforge.upstream.update.plan_update`: the report's changes written into the matrix text in
  place (comments and layout kept), checked to load and lint no worse.
- `relforge.upstream.pullrequest`: the update as a branch and a pull request, rerun-safe.
"""
