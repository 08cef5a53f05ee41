"""A small project for the cherry-pick bot tests: a bare origin with `main`, `release/2.8` and
`release/2.9`, a fix merged on main, the fix's PR and the release trackers on the fake GitHub,
and a separate clone the bot works in (like the checkout of a GitHub Actions job)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from relforge.bot.dispatch import dispatch
from relforge.bot.flow import FlowSettings
from relforge.bot.handler import BotSettings, CommentEvent, CommentOutcome, handle_comment
from relforge.forges.github import GitHubClient
from relforge.git import Git
from tests.fakegithub import FakeGitHub
from tests.gitrepos import Repos, git, make_repos

REPO = "acme/widget"
FIXES = "https://github.example/acme/widget/issues/7"  # the fake GitHub's web host
BASE_FILES = {
    "version.txt": "2.9.0a0\n",
    "src/lib.py": "def answer():\n    return 41\n",
    "README": "widget\n",
}
_ids = itertools.count(5000)


@dataclass
class World:
    repos: Repos
    fake: FakeGitHub
    bot_clone: Path
    trackers: dict[str, int] = field(default_factory=dict)
    waits: list[float] = field(default_factory=list)

    @property
    def git(self) -> Git:
        return Git(self.bot_clone)

    def client(self, **kw: Any) -> GitHubClient:
        return GitHubClient(REPO, sleep=self.waits.append, **kw)

    def remote_heads(self) -> dict[str, str]:
        out = git(self.repos.origin, "for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ") for line in out.splitlines())

    def land(
        self,
        title: str,
        files: dict[str, str] | None = None,
        *,
        merge: bool = False,
        method: str = "squash",
        steps: list[tuple[str, dict[str, str]]] | None = None,
        labels: tuple[str, ...] = (),
    ) -> tuple[int, str]:
        """Land a PR on main the way GitHub's merge button does (`method`: squash, merge or
        rebase; `steps`: the PR's commits, default one commit of `files`); its number and
        GitHub's merge_commit_sha (for a rebase: the last rebased commit)."""
        method = "merge" if merge else method
        clone = self.repos.clone
        steps = steps or [(title, files or {})]
        git(clone, "checkout", "-q", "main")
        git(clone, "pull", "-q", "--ff-only", "origin", "main")
        branch = f"topic-{next(_ids)}"
        git(clone, "checkout", "-q", "-b", branch)
        originals = [self.repos.commit(message, changed) for message, changed in steps]
        git(clone, "checkout", "-q", "main")
        if method == "merge":
            git(clone, "merge", "-q", "--no-ff", "-m", f"Merge {branch}: {title}", branch)
        elif method == "squash":
            git(clone, "merge", "-q", "--squash", branch)
            git(clone, "commit", "-q", "-m", f"{title} (#PR)")
        else:  # rebase: someone else landed first, so every rebased commit is a new one
            self.repos.commit(f"other work before {branch}", {f"other-{branch}.txt": "x\n"})
            for sha in originals:
                git(clone, "cherry-pick", sha)
        sha = git(clone, "rev-parse", "HEAD")
        git(clone, "push", "-q", "origin", "main")
        number = self.fake.add_pull(
            REPO,
            title,
            head=branch,
            merged=True,
            merge_commit_sha=sha,
            commits=[api_commit(clone, c) for c in originals],
            labels=labels,
        )
        return number, sha

    def land_revert(self, commit: str) -> tuple[int, str]:
        """Land `git revert <commit>` on main as a merged PR (rebased: the commit itself)."""
        clone = self.repos.clone
        git(clone, "checkout", "-q", "main")
        git(clone, "pull", "-q", "--ff-only", "origin", "main")
        git(clone, "revert", "--no-edit", commit)
        sha = git(clone, "rev-parse", "HEAD")
        git(clone, "push", "-q", "origin", "main")
        title = git(clone, "show", "-s", "--format=%s", sha)
        number = self.fake.add_pull(
            REPO,
            title,
            head=f"revert-{next(_ids)}",
            merged=True,
            merge_commit_sha=sha,
            commits=[api_commit(clone, sha)],
        )
        return number, sha

    def dispatch(self, name: str, payload: dict[str, Any], **settings: Any) -> CommentOutcome:
        """Deliver a webhook event to the bot as `relforge bot serve` does (execute)."""
        flow = FlowSettings(draft_on_conflict=settings.pop("draft_on_conflict", False))
        bot = BotSettings(execute=settings.pop("execute", True), flow=flow, **settings)
        return dispatch(
            name,
            payload,
            git=self.git,
            github_repo=REPO,
            settings=bot,
            client=lambda _: self.client(),
        )

    def on_release(self, branch: str, *args: str) -> str:
        """Run git on a release branch of the working clone and push it; the new tip."""
        clone = self.repos.clone
        git(clone, "checkout", "-q", branch)
        git(clone, *args)
        git(clone, "push", "-q", "origin", branch)
        tip = git(clone, "rev-parse", "HEAD")
        git(clone, "checkout", "-q", "main")
        return tip

    def handle(
        self,
        body: str,
        *,
        number: int,
        user: str | None = "alice",
        execute: bool = True,
        comment_id: int | None = None,
        draft_on_conflict: bool = False,
        gh: GitHubClient | None = None,
        **payload: Any,
    ) -> CommentOutcome:
        event = CommentEvent.from_payload(
            comment_event(body, number=number, user=user, comment_id=comment_id, **payload)
        )
        settings = BotSettings(
            execute=execute, flow=FlowSettings(draft_on_conflict=draft_on_conflict)
        )
        return handle_comment(event, git=self.git, gh=gh or self.client(), settings=settings)

    def pulls(self) -> list[dict[str, Any]]:
        return list(self.fake.repo(REPO).pulls.values())

    def new_pulls(self) -> list[dict[str, Any]]:
        return [p for p in self.pulls() if (p["user"] or {}).get("login") == "relforge-bot"]


def api_commit(repo: Path, sha: str) -> dict[str, Any]:
    """A commit as `GET /pulls/{n}/commits` lists it."""
    fields = git(repo, "show", "-s", "--format=%an%x00%ae%x00%aI%x00%P%x00%B", sha)
    name, email, date, parents, message = fields.split("\0", 4)
    person = {"name": name, "email": email, "date": date}
    return {
        "sha": sha,
        "commit": {"message": message.strip(), "author": person, "committer": person},
        "author": None,  # nullable-simple-user: the email matches no GitHub account
        "committer": None,
        "parents": [{"sha": p} for p in parents.split()],
    }


def comment_event(
    body: str,
    *,
    number: int,
    user: str | None = "alice",
    comment_id: int | None = None,
    action: str = "created",
    is_pull_request: bool = True,
    user_type: str = "User",
    repo: str = REPO,
) -> dict[str, Any]:
    """An `issue_comment` payload shaped like GitHub's (the fields the bot reads, and a few)."""
    issue: dict[str, Any] = {"number": number, "title": "a pull request", "state": "closed"}
    if is_pull_request:
        issue["pull_request"] = {"url": f"https://api.example/repos/{repo}/pulls/{number}"}
    return {
        "action": action,
        "issue": issue,
        "comment": {
            "id": comment_id if comment_id is not None else next(_ids),
            "body": body,
            "user": None if user is None else {"login": user, "type": user_type},
        },
        "repository": {"full_name": repo},
        "sender": {"login": user},
    }


def make_world(tmp_path: Path, fake: FakeGitHub) -> World:
    repos = make_repos(tmp_path, BASE_FILES)
    for branch in ("release/2.8", "release/2.9"):
        git(repos.clone, "branch", branch)
        git(repos.clone, "push", "-q", "origin", branch)
    bot_clone = repos.another_clone("bot-checkout")
    fake.repo(REPO)
    for user, permission in [("alice", "write"), ("maintainer", "maintain"), ("owner", "admin")]:
        fake.set_permission(REPO, user, permission)
    world = World(repos, fake, bot_clone)
    label = ("release tracker",)
    # A decoy that a substring match of "2.9" would take first.
    world.trackers["2.91"] = fake.add_issue(REPO, "[v2.91.0] Release Tracker", labels=label)
    world.trackers["2.9-closed"] = fake.add_issue(
        REPO, "[v2.9.0] Release Tracker", labels=label, state="closed"
    )
    world.trackers["2.9-unlabelled"] = fake.add_issue(REPO, "[v2.9.0] Release Tracker notes")
    world.trackers["2.9"] = fake.add_issue(REPO, "[v2.9.0] Release Tracker", labels=label)
    world.trackers["2.8"] = fake.add_issue(REPO, "[v.2.8.0] Release Tracker", labels=label)
    return world


def pull_event(
    action: str,
    *,
    number: int,
    merged: bool = True,
    label: str | None = None,
    sender: str | None = "alice",
    labels: tuple[str, ...] = (),
    repo: str = REPO,
) -> dict[str, Any]:
    """A `pull_request` payload shaped like GitHub's (the fields the bot reads, and a few)."""
    payload: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "state": "closed" if merged else "open",
            "merged": merged,
            "labels": [{"name": name} for name in labels],
            "user": None,
            "merged_by": None,
        },
        "repository": {"full_name": repo},
        "sender": None if sender is None else {"login": sender, "type": "User"},
    }
    if label is not None:
        payload["label"] = {"name": label, "color": "ededed"}
    return payload


@pytest.fixture
def world(tmp_path: Path, fake_github: FakeGitHub) -> World:
    """A project with its origin, release branches and a bot checkout, on the GitHub double
    (the bot tests' common world; tests/conftest.py loads this module as a plugin)."""
    return make_world(tmp_path, fake_github)
