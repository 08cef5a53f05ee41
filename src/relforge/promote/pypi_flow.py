"""The two PyPI steps as the CLI runs them: stage (plan, rewrite, refuse conflicts, apply) and
upload (resolve the repository and index, compare, upload) — each a dry run unless executed."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from relforge.matrix.schema import Matrix
from relforge.promote.plan import Echo
from relforge.promote.pypi import StagePlan, UploadItem
from relforge.promote.store import ObjectStore
from relforge.wheelversion import Rewritten


@dataclass(frozen=True, kw_only=True)
class StageResult:
    rewritten: tuple[Rewritten, ...]  # the wheels rewritten (on a dry run: those refused-checked)
    created: int | None  # objects written; None on a dry run (nothing was written)


def stage_wheels(plan: StagePlan, echo: Echo, *, execute: bool) -> StageResult:
    """Print the staging plan and, with `execute`, rewrite and write the staged wheels.

    A dry run rewrites (in a temporary directory) the wheels whose staged name is taken, so it
    refuses what an executed run would refuse: a staged file is never replaced."""
    from relforge.promote.plan import Plan, render
    from relforge.promote.plan import execute as apply
    from relforge.promote.pypi import apply_stage, render_stage
    from relforge.promote.transfer import refuse_conflicts

    render_stage(plan, echo)
    present = {key for _, key in plan.inputs if plan.store.head(key) is not None}
    if not execute and not present:
        return StageResult(rewritten=(), created=None)
    with tempfile.TemporaryDirectory(prefix="relforge-stage-") as tmp:
        batch, rewritten = apply_stage(plan, Path(tmp), only=None if execute else present)
        for r in rewritten:
            echo(f"  {r.path.name}: " + "; ".join(r.changes or ("unchanged",)))
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


def plan_pypi_upload(
    matrix: Matrix, version: str, repository_url: str | None, index_url: str | None
) -> UploadPlan:
    """What uploading the staged files of `version` would do, file by file (no upload)."""
    from relforge.promote.channel import main_store
    from relforge.promote.pypi import check_url, default_index_url, plan_upload, require_repository

    repository = require_repository(repository_url, matrix)
    index = check_url(index_url, "--index-url") if index_url else default_index_url(repository)
    store = main_store(matrix)
    items = plan_upload(store, version, index)
    return UploadPlan(
        version=version, repository=repository, index=index, store=store, items=tuple(items)
    )


def render_upload(plan: UploadPlan, echo: Echo) -> None:
    """The upload plan, one line per staged file."""
    from relforge.promote.pypi import public_url

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
    from relforge.promote.pypi import refuse_upload_conflicts

    refuse_upload_conflicts(list(plan.items), plan.index)


def apply_upload(plan: UploadPlan) -> int:
    """Upload the files the index lacks; returns how many were uploaded."""
    from relforge.promote.pypi import upload

    return upload(plan.store, list(plan.items), plan.repository, plan.index)
