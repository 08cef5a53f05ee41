"""`upstream update --pull-request`: the update as one commit on the base branch's head, pushed to
a branch of its own and proposed in a pull request whose body lists each change with its upstream
source.  One branch per matrix file and release, so a rerun finds its pull request: while it is
open and holds the same text, nothing happens; when upstream moved again, the branch is replaced
(guarded by a lease on its old commit) and the pull request's body updated."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from relforge.errors import ConfigError, UsageError
from relforge.forges import require_project_repo
from relforge.forges.github import GitHubClient, GitHubError, PullRequest
from relforge.git import Git
from relforge.upstream.model import UpstreamFinding
from relforge.upstream.update import UpdatePlan

Action = Literal["open", "update", "current", "nothing"]


@dataclass(frozen=True, kw_only=True)
class Checkout:
    """The clone the pull request is made from: the matrix as committed on the checked-out
    branch (the base), and the GitHub repository it belongs to."""

    git: Git
    path: str  # the matrix file, relative to the repository root
    base: str
    text: str
    repo: str


def open_checkout(file: str, *, remote: str, github_repo: str | None) -> Checkout:
    """Refuses a matrix with uncommitted changes: the pull request holds the base's text plus
    the update, nothing else."""
    path = Path(file)
    git = Git(path.resolve().parent)
    rel = path.resolve().relative_to(git.root).as_posix()
    base = git.require_branch()
    head = git.commit_of("HEAD")
    committed = git.read_file(head, rel) if head else None
    if committed is None:
        raise UsageError(f"{file} is not committed on {base}", key="FILE")
    if path.read_text(encoding="utf-8") != committed:
        raise UsageError(
            f"{file} has uncommitted changes; the pull request is made from {base}'s commit",
            key="FILE",
            hint="commit or stash them first",
        )
    # in the generated workflow, the repository it runs for
    repo = require_project_repo(git, remote, github_repo or os.environ.get("GITHUB_REPOSITORY"))
    return Checkout(git=git, path=rel, base=base, text=committed, repo=repo)


def github_token() -> str:
    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        raise ConfigError(
            "--pull-request needs a token in GITHUB_TOKEN",
            key="GITHUB_TOKEN",
            hint="in Actions: env: GITHUB_TOKEN: ${{ github.token }} (contents and pull-requests "
            "write)",
        )
    return token


IDENTITY = ("relforge-upstream", "relforge-upstream@users.noreply.github.com")
MARKER = "<!-- relforge upstream update -->"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def branch_name(path: str, release: str) -> str:
    """`relforge/upstream/matrix-ext/0.5` for matrix/ext.yaml, release 0.5."""
    stem = path.rsplit(".", 1)[0] if path.endswith((".yaml", ".yml")) else path
    return f"relforge/upstream/{_UNSAFE.sub('-', stem).strip('-.') or 'matrix'}/{release}"


@dataclass(frozen=True, kw_only=True)
class PullRequestPlan:
    repo: str
    remote: str
    base: str
    base_commit: str
    branch: str
    path: str  # the matrix file, relative to the repository root
    title: str
    body: str
    action: Action
    pull: PullRequest | None  # the open pull request of the branch, if any
    branch_commit: str | None  # what the branch holds on the remote now

    @property
    def due(self) -> bool:
        """A push is due: the pull request is to be opened or updated (not current, and the
        matrix has a change)."""
        return self.action in ("open", "update")

    def describe(self) -> str:
        where = f"{self.repo} {self.branch} → {self.base}"
        number = f"#{self.pull.number}" if self.pull else ""
        return {
            "open": f"push {self.branch} and open a pull request ({where})",
            "update": f"push {self.branch} again and update pull request {number} ({where})",
            "current": f"pull request {number} is open and holds this update: nothing to do",
            "nothing": "no change is due: nothing to push",
        }[self.action]


def plan_pull_request(
    git: Git, gh: GitHubClient, plan: UpdatePlan, *, path: str, remote: str, base: str
) -> PullRequestPlan:
    """What the pull request step would do (reads the remote and the API only)."""
    branch = branch_name(path, plan.report.release)
    ref = f"refs/heads/{branch}"
    owner = gh.repo.split("/")[0]
    open_pulls = gh.pulls(state="open", head=f"{owner}:{branch}", base=base)
    pull = open_pulls[0] if open_pulls else None
    on_remote = git.remote_refs(remote, ref).get(ref)
    action: Action
    if not plan.changed:
        action = "nothing"
    elif pull is not None and on_remote is not None and _holds(git, remote, on_remote, path, plan):
        action = "current"
    else:
        action = "update" if pull is not None else "open"
    base_commit = git.commit_of("HEAD")
    assert base_commit is not None
    return PullRequestPlan(
        repo=gh.repo,
        remote=remote,
        base=base,
        base_commit=base_commit,
        branch=branch,
        path=path,
        title=pull_title(plan, path),
        body=pull_body(plan, path),
        action=action,
        pull=pull,
        branch_commit=on_remote,
    )


def _holds(git: Git, remote: str, commit: str, path: str, plan: UpdatePlan) -> bool:
    if not git.has_commit(commit):
        git.fetch_objects(remote, [commit])
    return git.read_file(commit, path) == plan.new_text


def apply_pull_request(
    git: Git, gh: GitHubClient, pr: PullRequestPlan, plan: UpdatePlan, *, token: str | None
) -> PullRequest | None:
    """Push the branch and open or update the pull request; a no-op for current/nothing."""
    if not pr.due:
        return pr.pull
    message = f"{pr.title}\n\n" + "\n".join(f"- {f.message}" for f in plan.written) + "\n"
    commit = git.commit_files(pr.base_commit, {pr.path: plan.new_text}, message, env=_identity(git))
    ref = f"refs/heads/{pr.branch}"
    git.push(pr.remote, [f"{commit}:{ref}"], leases={ref: pr.branch_commit}, token=token)
    if pr.pull is not None:
        return gh.edit_pull(pr.pull.number, title=pr.title, body=pr.body)
    try:
        return gh.create_pull(title=pr.title, head=pr.branch, base=pr.base, body=pr.body)
    except GitHubError as exc:
        if exc.status != 422:
            raise
        owner = gh.repo.split("/")[0]  # opened meanwhile by a concurrent run: update that one
        found = gh.pulls(state="open", head=f"{owner}:{pr.branch}", base=pr.base)
        if not found:
            raise
        return gh.edit_pull(found[0].number, title=pr.title, body=pr.body)


def _identity(git: Git) -> dict[str, str]:
    """Commit as relforge when the clone has no identity (as on a fresh CI runner)."""
    if git.ok("config", "user.name") and git.ok("config", "user.email"):
        return {}
    name, email = IDENTITY
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def pull_title(plan: UpdatePlan, path: str) -> str:
    parts = []
    for f in plan.written:
        if f.kind == "axis-new":
            parts.append(f"{f.subject} {f.upstream}")
    pins = sum(f.kind == "pin-changed" for f in plan.written)
    if pins:
        parts.append(f"{pins} pin(s)")
    added = [f.subject.removeprefix("Python ") for f in plan.written if f.kind == "python-new"]
    dropped = [f.subject.removeprefix("Python ") for f in plan.written if f.kind == "python-eol"]
    if added or dropped:
        parts.append("Python " + " ".join([*(f"+{p}" for p in added), *(f"-{p}" for p in dropped)]))
    what = ", ".join(parts) or "upstream changes"
    return f"Follow upstream in {path} {plan.report.release}: {what}"


def _item(f: UpstreamFinding) -> list[str]:
    lines = [f"- **{f.kind}** {f.message}"]
    if f.source is not None:
        src = f.source
        lines.append(
            f"  - source: `{src.file}`"
            + (f", sha256 `{src.sha256}`" if src.sha256 else "")
            + (
                f", {'METADATA line' if src.file.endswith('.whl') else 'line'} `{src.line}`"
                if src.line
                else ""
            )
        )
    if f.manual:
        lines.append(f"  - by hand: {f.manual}")
    return lines


def pull_body(plan: UpdatePlan, path: str) -> str:
    report = plan.report
    lines = [
        f"`relforge upstream update {path} --release {report.release}` found these changes "
        f"against {report.index} (policy date {report.policy_date}).",
        "",
        "### Written into the matrix",
        "",
    ]
    for f in plan.written:
        lines += _item(f)
    if plan.manual:
        lines += ["", "### Left for a person", ""]
        for f in plan.manual:
            lines += _item(f)
    lines += [
        "",
        "The edited matrix loads and lints no worse than before; CI builds the new cells. "
        "Rerunning the update replaces this branch when upstream moves again.",
        "",
        MARKER,
    ]
    return "\n".join(lines)
