"""The two PyPI steps as the CLI runs them: stage (plan, rewrite, check against PyPI's limits,
refuse conflicts, apply) and upload (resolve the repository and index, compare, check, upload) —
each a dry run unless executed, each ending in an outcome (`StageResult`, `UploadResult`) in the
shapes a command gives it: the lines people read, versioned JSON for machines (one shape for the
dry run and the run: `executed` says which) and the markdown of the job's step summary."""

from __future__ import annotations

import datetime
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.matrix.schema import Matrix
from relforge.matrixstores import main_store
from relforge.output import in_place, summary_with_list, versioned
from relforge.promote.plans.storeplan import Echo, StorePlan, render
from relforge.promote.plans.storeplan import execute as apply
from relforge.promote.pypi.preflight import preflight
from relforge.promote.pypi.refusals import Limits
from relforge.promote.pypi.stage import (
    StagePlan,
    UploadItem,
    apply_stage,
    check_url,
    default_index_url,
    plan_upload,
    public_url,
    pypi_limits,
    refuse_upload_conflicts,
    require_repository,
)
from relforge.promote.pypi.upload import download_staged, upload
from relforge.stores.objectstore import ObjectStore
from relforge.stores.transfer import refuse_conflicts
from relforge.wheelversion import Rewritten

SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class StageResult:
    """A staging plan, its wheels as rewritten and, when executed, the objects written."""

    plan: StagePlan
    rewritten: tuple[Rewritten, ...]  # the wheels rewritten (on a dry run: those refused-checked)
    created: int | None  # objects written; None on a dry run (nothing was written)

    @property
    def executed(self) -> bool:
        return self.created is not None

    def summary(self) -> str:
        line = (
            f"staged {self.created or 0} new file(s) of {self.plan.version} "
            f"({len(self.rewritten)} in all)"
        )
        return in_place(line, self.created == 0)

    def lines(self) -> list[str]:
        """What the run did (nothing on a dry run: the plan was printed as it went)."""
        return [self.summary()] if self.executed else []

    def summary_markdown(self) -> str:
        """The summary line, then each staged file with its sha256."""
        files = [f"- `{r.path.name}` sha256 `{r.sha256}`" for r in self.rewritten]
        return summary_with_list(self.summary(), files)

    def to_json(self) -> dict[str, Any]:
        data = self.plan.to_json()
        for file, r in zip(data["files"], self.rewritten, strict=True):
            file.update(filename=r.path.name, sha256=r.sha256, size=r.size, changes=list(r.changes))
        data["executed"] = self.executed
        data["created"] = self.created
        return versioned(data, SCHEMA_VERSION)


def stage_wheels(
    plan: StagePlan, echo: Echo, *, execute: bool, now: datetime.datetime | None = None
) -> StageResult:
    """Print the staging plan, rewrite every wheel (in a temporary directory), check them
    against PyPI's limits and upload checks and refuse what an executed run would refuse (a
    staged file is never replaced); with `execute`, write the staged wheels.  `now` is the
    clock of PyPI's 14-day rule (default: the current time)."""

    for line in plan.lines():
        echo(line)
    with tempfile.TemporaryDirectory(prefix="relforge-stage-") as tmp:
        batch, rewritten = apply_stage(plan, Path(tmp))
        for r in rewritten:
            echo(f"  {r.path.name}: " + "; ".join(r.changes or ("unchanged",)))
        paths = [r.path for r in rewritten]
        preflight(paths, plan.limits, plan.index_url, echo, nothing="staged", now=now)
        staged = StorePlan(
            command="pypi-stage",
            title=f"PyPI staging of {plan.version}",
            batches=(batch,),
            store=plan.store,
        )
        render(staged, echo)
        refuse_conflicts(staged.batches)
        if not execute:
            return StageResult(plan=plan, rewritten=tuple(rewritten), created=None)
        outcome = apply(staged, echo)
    return StageResult(plan=plan, rewritten=tuple(rewritten), created=outcome.created)


@dataclass(frozen=True, kw_only=True)
class UploadPlan:
    version: str
    repository: str  # upload endpoint
    index: str  # simple index that shows what the repository holds
    store: ObjectStore  # holds pypi-staging/X.Y.Z/
    items: tuple[UploadItem, ...]
    limits: Limits  # publishing.pypi_file_limit_mb, pypi_project_limit_mb

    def lines(self) -> list[str]:
        """The upload plan, one line per staged file."""

        out = [
            f"upload {len(self.items)} staged file(s) of {self.version} to "
            f"{public_url(self.repository)} (index {public_url(self.index)})"
        ]
        verbs = {"upload": "upload", "identical": "skip", "conflict": "REFUSE"}
        for item in self.items:
            found = (
                f" (index has {item.found[:12]}…)"
                if item.state == "conflict" and item.found
                else ""
            )
            out.append(
                f"  {verbs[item.state]:<7} {item.filename}  sha256={item.sha256[:12]}…{found}"
            )
        return out


@dataclass(frozen=True, kw_only=True)
class UploadResult:
    """An upload plan and, when executed, how many files were uploaded."""

    plan: UploadPlan
    uploaded: int | None  # None on a dry run (nothing was uploaded)

    @property
    def executed(self) -> bool:
        return self.uploaded is not None

    def summary(self) -> str:
        uploaded = self.uploaded or 0
        skipped = len(self.plan.items) - uploaded
        version = self.plan.version
        return f"uploaded {uploaded} file(s) of {version}; {skipped} already on the index"

    def lines(self) -> list[str]:
        """What the run did (nothing on a dry run: the plan was printed before)."""
        return [self.summary()] if self.executed else []

    def summary_markdown(self) -> str:
        """The summary line, then each file uploaded or skipped."""
        verbs = {"upload": "uploaded", "identical": "already on the index"}
        files = [f"- `{i.filename}`: {verbs.get(i.state, i.state)}" for i in self.plan.items]
        return summary_with_list(self.summary(), files)

    def to_json(self) -> dict[str, Any]:

        plan = self.plan
        return versioned(
            {
                "version": plan.version,
                "repository": public_url(plan.repository),
                "index": public_url(plan.index),
                "store": plan.store.url,
                "files": [i.to_json() for i in plan.items],
                "executed": self.executed,
                "uploaded": self.uploaded,
            },
            SCHEMA_VERSION,
        )


@dataclass(frozen=True, kw_only=True)
class UploadRequest:
    """What `relforge pypi upload` asks for: the staged files of `version` of `matrix`
    uploaded to `repository_url` (default: TWINE_REPOSITORY_URL's, then the matrix's, then
    PyPI's), checked against the index at `index_url` (default: the repository's)."""

    matrix: Matrix
    version: str
    repository_url: str | None
    index_url: str | None


def plan_pypi_upload(request: UploadRequest) -> UploadPlan:
    """What uploading the staged files of `version` would do, file by file (no upload)."""
    matrix, version = request.matrix, request.version
    repository_url, index_url = request.repository_url, request.index_url

    repository = require_repository(repository_url, matrix)
    index = check_url(index_url, "--index-url") if index_url else default_index_url(repository)
    store = main_store(matrix)
    items = plan_upload(store, version, index)
    return UploadPlan(
        version=version,
        repository=repository,
        index=index,
        store=store,
        items=tuple(items),
        limits=pypi_limits(matrix),
    )


def refuse_upload(plan: UploadPlan) -> None:
    """Refuse (before anything is uploaded) when the index has a file with other bytes."""

    refuse_upload_conflicts(list(plan.items), plan.index)


def upload_release(
    plan: UploadPlan, echo: Echo, *, execute: bool, now: datetime.datetime | None = None
) -> UploadResult:
    """Download the files the index lacks, check them against PyPI's limits and upload checks
    (one refusal naming every problem, nothing uploaded; `now` is the clock of PyPI's 14-day
    rule, default the current time) and, with `execute`, upload them.  Files the index has with
    the same sha256 are not uploaded again, so a rerun is a no-op however old the release."""

    todo = [i for i in plan.items if i.state == "upload"]
    with tempfile.TemporaryDirectory(prefix="relforge-pypi-") as tmp:
        paths = download_staged(plan.store, todo, Path(tmp))
        preflight(paths, plan.limits, plan.index, echo, nothing="uploaded", now=now)
        if not execute:
            return UploadResult(plan=plan, uploaded=None)
        return UploadResult(
            plan=plan, uploaded=upload(todo, paths, plan.repository, plan.index, echo)
        )
