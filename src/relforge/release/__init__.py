"""Release branches, tags and audits on real git repositories.

Entry points: `plan_cut` (relforge.release.cut, given a `CutRequest`), `plan_tag`
(relforge.release.tag, a `TagRequest`) and `plan_patch` (relforge.release.patch, a
`PatchRequest`) plan ref updates against the remote, `apply_plan`
(relforge.release.apply) pushes them; `release_status` (relforge.release.status, a
`StatusRequest`) and `audit_release` (relforge.release.audit, an `AuditRequest`) report on a
release line; git itself is run through
`Git` (relforge.release.git).  `plan_lines`, `status_lines` and `audit_lines`
(relforge.release.show) give what people read of a plan, a status and an audit (the command
line prints them), `plan_markdown` and `audit_markdown` their step summaries, and each object's
`to_json()` its JSON.
"""

from __future__ import annotations

from relforge.release.apply import apply_plan
from relforge.release.audit import AuditReport, AuditRequest, audit_release
from relforge.release.cut import CutRequest, plan_cut
from relforge.release.milestone import fetch_milestone, load_milestone_file
from relforge.release.patch import PatchRequest, plan_patch
from relforge.release.releaseplan import ReleasePlan
from relforge.release.show import (
    audit_lines,
    audit_markdown,
    plan_lines,
    plan_markdown,
    status_lines,
)
from relforge.release.status import LineStatus, StatusRequest, release_status
from relforge.release.tag import TagRequest, plan_tag
from relforge.release.versions import parse_line, parse_release

__all__ = [
    "AuditReport",
    "AuditRequest",
    "CutRequest",
    "LineStatus",
    "PatchRequest",
    "ReleasePlan",
    "StatusRequest",
    "TagRequest",
    "apply_plan",
    "audit_lines",
    "audit_markdown",
    "audit_release",
    "fetch_milestone",
    "load_milestone_file",
    "parse_line",
    "parse_release",
    "plan_cut",
    "plan_lines",
    "plan_markdown",
    "plan_patch",
    "plan_tag",
    "release_status",
    "status_lines",
]
