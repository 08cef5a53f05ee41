"""Which commits of one line are already on another: by `git cherry-pick -x` trailer, or by
patch-id when the trailer is missing (picked without -x, or squashed the same way).  Also reads
`git revert` messages.  Used by the release audit and by the cherry-pick bot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from relforge.git import Git

# The trailer `git cherry-pick -x` appends, and the first line of `git revert`'s message body.
_PICKED = re.compile(r"^\(cherry picked from commit ([0-9a-f]{7,40})\)$", re.MULTILINE)
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{7,40})", re.MULTILINE)
_SEP = "\x1e"  # record separator between commits in `git log` output


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str

    @property
    def picked_from(self) -> tuple[str, ...]:
        """Commits this one says it was cherry-picked from (`-x` trailers)."""
        return tuple(_PICKED.findall(self.body))

    @property
    def reverts(self) -> str | None:
        """The commit this one reverts, if it is a `git revert`."""
        found = _REVERTS.search(self.body)
        return found.group(1) if found else None


@dataclass(frozen=True)
class PickMatch:
    source: str
    pick: str
    how: Literal["trailer", "patch-id", "same-commit"]


def commits(git: Git, rev_range: str, *paths: str) -> list[Commit]:
    """Commits of a range (`A..B` or a ref), newest first."""
    out = git.run("log", f"--format=%H%x1f%s%x1f%B{_SEP}", rev_range, "--", *paths)
    found = []
    for record in out.split(_SEP):
        record = record.strip("\n")
        if not record:
            continue
        sha, subject, body = record.split("\x1f", 2)
        found.append(Commit(sha, subject, body))
    return found


def patch_ids(git: Git, rev_range: str) -> dict[str, str]:
    """patch-id → commit for every non-merge commit of a range."""
    diff = git.run("log", "-p", "--no-merges", "--format=commit %H", rev_range)
    if not diff.strip():
        return {}
    out = git.run("patch-id", "--stable", stdin=diff)
    ids: dict[str, str] = {}
    for line in out.splitlines():
        pid, _, sha = line.partition(" ")
        ids.setdefault(pid, sha)
    return ids


def patch_id(git: Git, commit: str) -> str | None:
    """The stable patch-id of one commit (None for an empty or merge commit)."""
    diff = git.run("show", "--format=", "-p", commit)
    if not diff.strip():
        return None
    out = git.run("patch-id", "--stable", stdin=diff).split()
    return out[0] if out else None


class PickIndex:
    """What a branch range already contains, to answer "is commit X on it?" quickly."""

    def __init__(self, git: Git, rev_range: str) -> None:
        self.git = git
        self.commits = commits(git, rev_range)
        self.shas = {c.sha for c in self.commits}
        self.by_trailer: dict[str, str] = {}
        for c in self.commits:
            for source in c.picked_from:
                self.by_trailer.setdefault(source, c.sha)
        self._patch_ids: dict[str, str] | None = None
        self.rev_range = rev_range

    def find(self, source: str) -> PickMatch | None:
        if source in self.shas:
            return PickMatch(source, source, "same-commit")
        for short, pick in self.by_trailer.items():
            if source.startswith(short) or short.startswith(source):
                return PickMatch(source, pick, "trailer")
        pid = patch_id(self.git, source)
        if pid is None:
            return None
        if self._patch_ids is None:
            self._patch_ids = patch_ids(self.git, self.rev_range)
        found = self._patch_ids.get(pid)
        return PickMatch(source, found, "patch-id") if found else None
