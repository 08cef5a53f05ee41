"""`relforge upstream update` as the command runs it: check the release against the index, plan
the edits, then (when executed) write the matrix in place or, with `--pull-request`, push a branch
and open or update its pull request.  Each step returns an `UpdateOutcome`."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from pathlib import Path

from relforge.forges.github import GitHubClient
from relforge.git import Git
from relforge.matrix.load import read_text
from relforge.upstream.index import UpstreamIndex
from relforge.upstream.pullrequest import (
    apply_pull_request,
    github_token,
    open_checkout,
    plan_pull_request,
)
from relforge.upstream.releasecheck import Loaded, UpstreamRequest, check_upstream
from relforge.upstream.update import plan_update
from relforge.upstream.updateoutcome import UpdateOutcome


@dataclass(frozen=True, kw_only=True)
class MatrixUpdate:
    """An update written into the matrix file in place."""

    outcome: UpdateOutcome
    file: str

    def apply(self) -> UpdateOutcome:
        """Write the new text (atomically: a reader sees the old file or the new one); a
        matrix that is current is left alone."""
        from relforge.atomic import replacing

        if not self.outcome.due:
            return replace(self.outcome, executed=True)
        with replacing(Path(self.file)) as tmp:
            tmp.write_text(self.outcome.plan.new_text, encoding="utf-8")
        return replace(self.outcome, executed=True, wrote=self.file)


@dataclass(frozen=True, kw_only=True)
class PullRequestUpdate:
    """An update proposed as a pull request: made from the clone's committed matrix, pushed
    with the token to the repository the client talks to."""

    outcome: UpdateOutcome
    git: Git
    gh: GitHubClient
    token: str

    def apply(self) -> UpdateOutcome:
        """Push the branch and open or update the pull request (nothing when none is due)."""
        pr = self.outcome.pull
        assert pr is not None
        pull = apply_pull_request(self.git, self.gh, pr, self.outcome.plan, token=self.token)
        return replace(self.outcome, executed=True, pushed=self.outcome.due, opened=pull)


@dataclass(frozen=True, kw_only=True)
class UpdateRequest:
    """What `relforge upstream update` asks for: `release` (default: the newest) of the
    matrix `file` updated against the index at `index_url` as of `today` (default: the date
    today); `pull_request`: as a pull request pushed to `remote` of `github_repo` (default:
    $GITHUB_REPOSITORY, else the remote's URL)."""

    file: str
    index_url: str
    release: str | None
    today: datetime.date | None
    pull_request: bool = False
    remote: str = "origin"
    github_repo: str | None = None


def plan_upstream_update(request: UpdateRequest) -> MatrixUpdate | PullRequestUpdate:
    """The update of `release` (default: the newest) of the matrix `file` against the index;
    with `pull_request`, read from the clone's committed matrix and planned as a pull request
    (needs GITHUB_TOKEN, refused before any request when it is missing).  Writes nothing."""
    file, index_url, release, today = (
        request.file,
        request.index_url,
        request.release,
        request.today,
    )
    pull_request, remote, github_repo = request.pull_request, request.remote, request.github_repo
    if not pull_request:
        loaded = Loaded.parse(file, read_text(file))
        check = UpstreamRequest(loaded=loaded, release=release, today=today)
        report = check_upstream(UpstreamIndex(index_url), check)
        return MatrixUpdate(outcome=UpdateOutcome(plan=plan_update(loaded, report)), file=file)
    checkout = open_checkout(file, remote=remote, github_repo=github_repo)
    token = github_token()
    gh = GitHubClient(checkout.repo)
    loaded = Loaded.parse(file, checkout.text)
    check = UpstreamRequest(loaded=loaded, release=release, today=today)
    report = check_upstream(UpstreamIndex(index_url), check)
    plan = plan_update(loaded, report)
    pr = plan_pull_request(
        checkout.git, gh, plan, path=checkout.path, remote=remote, base=checkout.base
    )
    outcome = UpdateOutcome(plan=plan, pull=pr)
    return PullRequestUpdate(outcome=outcome, git=checkout.git, gh=gh, token=token)
