"""The two PyPI steps as the CLI runs them: stage (plan, rewrite, check against PyPI's limits,
refuse conflicts, apply) and upload (resolve the repository and index, compare, check, upload) —
each a dry run unless executed."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from relforge.matrix.schema import Matrix
from relforge.promote.plans.plan import Echo
from relforge.promote.pypi.checks import Limits
from relforge.promote.pypi.stage import StagePlan, UploadItem
from relforge.stores.store import ObjectStore
from relforge.wheelversion import Rewritten


@dataclass(frozen=True, kw_only=True)
class StageResult:
    rewritten: tuple[Rewritten, ...]  # the wheels rewritten (on a dry run: those refused-checked)
    created: int | None  # objects written; None on a dry run (nothing was written)


def stage_wheels(plan: StagePlan, echo: Echo, *, execute: bool) -> StageResult:
    """Print the staging plan, rewrite every wheel (in a temporary directory), check them
    against PyPI's limits and upload checks and refuse what an executed run would refuse (a
    staged file is never replaced); with `execute`, write the staged wheels."""
    from relforge.promote.plans.plan import Plan, render
    from relforge.promote.plans.plan import execute as apply
    from relforge.promote.pypi.preflight import preflight
    from relforge.promote.pypi.stage import apply_stage, render_stage
    from relforge.stores.transfer import refuse_conflicts

    render_stage(plan, echo)
    with tempfile.TemporaryDirectory(prefix="relforge-stage-") as tmp:
        batch, rewritten = apply_stage(plan, Path(tmp))
        for r in rewritten:
            echo(f"  {r.path.name}: " + "; ".join(r.changes or ("unchanged",)))
        preflight([r.path for r in rewritten], plan.limits, plan.index_url, echo, nothing="staged")
        staged = Plan(
            command="pypi-stage",
            title=f"PyPI staging of {plan.version}",
            batches=(batch,),
            store=plan.store,
        )
        render(staged, echo)
        refuse_conflicts(staged.batches)
        if not execute:
            return StageResult(rewritten=tuple(rewritten), created=None)
        outcome = apply(staged, echo)
    return StageResult(rewritten=tuple(rewritten), created=outcome.created)


@dataclass(frozen=True, kw_only=True)
class UploadPlan:
    version: str
    repository: str  # upload endpoint
    index: str  # simple index that shows what the repository holds
    store: ObjectStore  # holds pypi-staging/X.Y.Z/
    items: tuple[UploadItem, ...]
    limits: Limits  # publishing.pypi_file_limit_mb, pypi_project_limit_mb


def plan_pypi_upload(
    matrix: Matrix, version: str, repository_url: str | None, index_url: str | None
) -> UploadPlan:
    """What uploading the staged files of `version` would do, file by file (no upload)."""
    from relforge.matrixstores import main_store
    from relforge.promote.pypi.stage import (
        check_url,
        default_index_url,
        plan_upload,
        pypi_limits,
        require_repository,
    )

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


def render_upload(plan: UploadPlan, echo: Echo) -> None:
    """The upload plan, one line per staged file."""
    from relforge.promote.pypi.stage import public_url

    echo(
        f"upload {len(plan.items)} staged file(s) of {plan.version} to "
        f"{public_url(plan.repository)} (index {public_url(plan.index)})"
    )
    verbs = {"upload": "upload", "identical": "skip", "conflict": "REFUSE"}
    for item in plan.items:
        found = (
            f" (index has {item.found[:12]}…)" if item.state == "conflict" and item.found else ""
        )
        echo(f"  {verbs[item.state]:<7} {item.filename}  sha256={item.sha256[:12]}…{found}")


def refuse_upload(plan: UploadPlan) -> None:
    """Refuse (before anything is uploaded) when the index has a file with other bytes."""
    from relforge.promote.pypi.stage import refuse_upload_conflicts

    refuse_upload_conflicts(list(plan.items), plan.index)


def upload_release(plan: UploadPlan, echo: Echo, *, execute: bool) -> int | None:
    """Download the files the index lacks, check them against PyPI's limits and upload checks
    (one refusal naming every problem, nothing uploaded) and, with `execute`, upload them;
    returns how many were uploaded (None on a dry run)."""
    from relforge.promote.pypi.preflight import preflight
    from relforge.promote.pypi.upload import download_staged, upload

    todo = [i for i in plan.items if i.state == "upload"]
    with tempfile.TemporaryDirectory(prefix="relforge-pypi-") as tmp:
        paths = download_staged(plan.store, todo, Path(tmp))
        preflight(paths, plan.limits, plan.index, echo, nothing="uploaded")
        if not execute:
            return None
        return upload(todo, paths, plan.repository, plan.index)
