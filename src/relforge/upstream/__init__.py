"""Follow upstream: what a newer torch, numpy, CUDA or CPython asks of a release's matrix.

- `check_upstream` (relforge.upstream.releasecheck), given the index and an `UpstreamRequest`:
  one release against a PEP 503/691 index — new values of its dependency axes, pins that differ
  from the upstream wheel's own METADATA (PEP 658, or range requests into the wheel), yanked or
  missing pins, Pythons to add or drop — as a Report; `check_lines`, `markdown` and `summary`
  (relforge.upstream.upstreamreport) say it.
- `relforge.upstream.update.plan_update`: the report's changes written into the matrix text in
  place (comments and layout kept), checked to load and lint no worse.
- `relforge.upstream.pullrequest`: the update as a branch and a pull request, rerun-safe.
- `plan_upstream_update` (relforge.upstream.updateflow), given an `UpdateRequest`: the command
  `upstream update` — the plan as a `MatrixUpdate` or `PullRequestUpdate` whose `apply` writes
  or pushes it; each step gives an `UpdateOutcome` (relforge.upstream.updateoutcome: lines,
  versioned JSON, step summary).
"""

from __future__ import annotations

from relforge.upstream.index import PYPI, UpstreamIndex
from relforge.upstream.releasecheck import Loaded, UpstreamRequest, check_upstream
from relforge.upstream.updateflow import UpdateRequest, plan_upstream_update
from relforge.upstream.upstreamreport import check_lines, markdown, summary

__all__ = [
    "PYPI",
    "Loaded",
    "UpdateRequest",
    "UpstreamIndex",
    "UpstreamRequest",
    "check_lines",
    "check_upstream",
    "markdown",
    "plan_upstream_update",
    "summary",
]
