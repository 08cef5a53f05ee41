"""Promotion: channels in object stores, their package indexes, publish/promote/yank plans, PyPI.

Release artifacts are promoted, never rebuilt: the bytes that were validated are the bytes
users install.  Every write is create-if-absent and carries its sha256; nothing is overwritten
except index pages, which are replaced atomically.

Entry points, one line of the command line's each:
- `open_publishing` opens the publishing section's stores and trust once for a command
  (`relforge.matrixstores` opens each).
- `plan_publish` (a `PublishRequest`) and `plan_promote` (a `PromoteRequest`) plan uploads and
  copies as a `StorePlan`; `render` prints it, `execute` carries it out and `PlanReport` says
  what the run did (its lines and step summary, with what the pages leave off until a version
  is whole).
- `install_lines` gives the last lines of `publish`: the index URL(s) of what it uploaded
  (`StorePlan.install_urls`) with the pip and uv commands that install from them.
- `plan_channel_index` (an `IndexRequest`) / `apply_channel_index` rebuild a channel's index
  pages; `index_report` gives the `IndexReport` of the plan and the run (lines, JSON, step
  summary); `serving_warnings` names what the download URL will not serve.
- `plan_yank` (a `YankRequest`) / `apply_yank` mark files yanked (the plan's `lines()` say
  how); `apply_yank` gives the run's `YankOutcome` (the dry run's without `execute`).
- `apply_mirror` writes the dependency wheels `relforge.deps` planned and fetched into their
  folders, records and indexes them, and gives the `MirrorReport` (the dry run's without
  `execute`).
- `lease_scope` gives the `LeaseScope` a writing command runs in: each plan function
  (its `lease` argument, after the request) takes its channels' writer leases there before
  reading them, and they are released when the scope ends; a dry run's scope (policy None)
  takes none.
- `check_channel` (a `VerifyRequest`) verifies a channel into a `VerifyOutcome` (its JSON,
  lines and step summary).
- `bucket_policy` writes the public-read policy of a channel's bucket.
- `plan_stage` (a `StageRequest`) with `stage_wheels` stages wheels for PyPI (`strip_local`
  drops the local version label) and give a `StageResult`; `plan_pypi_upload` (an
  `UploadRequest`), `refuse_upload` and `upload_release` upload them (the plan's `lines()` say
  what) and give an `UploadResult`.
Each outcome has the lines people read, its step summary and a versioned `to_json()`.
The stores themselves are relforge.stores.

Layout: the package's own modules say where things live in a store and what the stored
manifests vouch for (channel, rootspec, vouch, completeness, channelview, advertised,
yanked, mirrors, archives, policy); index/ builds pages from that, plans/ changes a channel,
integrity/ checks and repairs it, pypi/ ships to PyPI.  The command line imports this front
door only.
"""

from __future__ import annotations

from relforge.promote.bucketpolicy import bucket_policy
from relforge.promote.channellease import LeaseScope, lease_scope
from relforge.promote.index.channelindex import (
    IndexRequest,
    apply_channel_index,
    plan_channel_index,
)
from relforge.promote.index.indexreport import index_report
from relforge.promote.index.serving import serving_warnings
from relforge.promote.install import install_lines
from relforge.promote.integrity.verification import VerifyRequest, check_channel
from relforge.promote.integrity.verifyoutcome import VerifyOutcome
from relforge.promote.plans.dependencies import apply_mirror
from relforge.promote.plans.promote import PromoteRequest, plan_promote
from relforge.promote.plans.publish import PublishRequest, plan_publish
from relforge.promote.plans.runreport import PlanReport
from relforge.promote.plans.storeplan import StorePlan, execute, render
from relforge.promote.plans.yank import YankRequest, apply_yank, plan_yank
from relforge.promote.publishing import open_publishing
from relforge.promote.pypi.stage import StageRequest, plan_stage
from relforge.promote.pypi.steps import (
    UploadRequest,
    plan_pypi_upload,
    refuse_upload,
    stage_wheels,
    upload_release,
)
from relforge.promote.pypi.wheels import strip_local

__all__ = [
    "IndexRequest",
    "LeaseScope",
    "PlanReport",
    "PromoteRequest",
    "PublishRequest",
    "StageRequest",
    "StorePlan",
    "UploadRequest",
    "VerifyOutcome",
    "VerifyRequest",
    "YankRequest",
    "apply_channel_index",
    "apply_mirror",
    "apply_yank",
    "bucket_policy",
    "check_channel",
    "execute",
    "index_report",
    "install_lines",
    "lease_scope",
    "open_publishing",
    "plan_channel_index",
    "plan_promote",
    "plan_publish",
    "plan_pypi_upload",
    "plan_stage",
    "plan_yank",
    "refuse_upload",
    "render",
    "serving_warnings",
    "stage_wheels",
    "strip_local",
    "upload_release",
]
