"""Follow upstream: what a newer torch, numpy, CUDA or CPython asks of a release's matrix.

- `relforge.upstream.check.check_upstream`: one release against a PEP 503/691 index — new values
  of its dependency axes, pins that differ from the upstream wheel's own METADATA (PEP 658, or
  range requests into the wheel), yanked or missing pins, Pythons to add or drop — as a Report.
- `relforge.upstream.update.plan_update`: the report's changes written into the matrix text in
  place (comments and layout kept), checked to load and lint no worse.
- `relforge.upstream.pullrequest`: the update as a branch and a pull request, rerun-safe.
- `relforge.upstream.flow.plan_upstream_update`: the command `upstream update` — the plan as a
  `MatrixUpdate` or `PullRequestUpdate` whose `apply` writes or pushes it; each step gives an
  `UpdateOutcome` (relforge.upstream.outcome: lines, versioned JSON, step summary).
"""

from __future__ import annotations

from relforge.upstream.check import Loaded, check_upstream
from relforge.upstream.flow import MatrixUpdate, PullRequestUpdate, plan_upstream_update
from relforge.upstream.index import PYPI, UpstreamIndex
from relforge.upstream.outcome import UpdateOutcome
from relforge.upstream.pullrequest import (
    apply_pull_request,
    github_token,
    open_checkout,
    plan_pull_request,
)
from relforge.upstream.report import check_lines, markdown, summary, update_lines
from relforge.upstream.update import plan_update

__all__ = [
    "PYPI",
    "Loaded",
    "MatrixUpdate",
    "PullRequestUpdate",
    "UpdateOutcome",
    "UpstreamIndex",
    "apply_pull_request",
    "check_lines",
    "check_upstream",
    "github_token",
    "markdown",
    "open_checkout",
    "plan_pull_request",
    "plan_update",
    "plan_upstream_update",
    "summary",
    "update_lines",
]
