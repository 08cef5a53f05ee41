"""`release status X.Y`: where a release line stands on the remote and what to run next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from relforge.git import Git
from relforge.release.picks import Commit, commits
from relforge.release.remote import RemoteState
from relforge.release.versions import Line, final_of, rcs_of, read_version
from relforge.versiontags import Tag


@dataclass(frozen=True, kw_only=True)
class LineStatus:
    line: Line
    remote: str
    branch: str | None  # tip of release/X.Y
    orig: str | None  # orig/release/X.Y
    cut_point: str | None
    version: Version | None  # version.txt on the branch tip
    tags: tuple[Tag, ...]
    newest_rc: Tag | None  # of the version the branch is working on
    since: tuple[Commit, ...]  # commits on the branch after `since_label`
    since_label: str  # the newest RC of the working version, else the line's newest tag or cut
    next_command: str

    def to_json(self) -> dict[str, Any]:
        return {
            "line": str(self.line),
            "remote": self.remote,
            "branch": {"name": self.line.branch, "commit": self.branch},
            "orig": {"name": self.line.orig_branch, "commit": self.orig},
            "cut_point": self.cut_point,
            "version": str(self.version) if self.version else None,
            "tags": [
                {"name": t.name, "commit": t.commit, "rc": t.rc, "final": t.is_final}
                for t in self.tags
            ],
            "newest_rc": self.newest_rc.name if self.newest_rc else None,
            "since": self.since_label,
            "commits_since": [{"commit": c.sha, "subject": c.subject} for c in self.since],
            "next": self.next_command,
        }


@dataclass(frozen=True, kw_only=True)
class StatusRequest:
    """What `relforge release status` asks for: release `line` against `trunk` on `remote`,
    its version read from `version_file`."""

    line: Line
    remote: str
    trunk: str
    version_file: str


def release_status(git: Git, request: StatusRequest) -> LineStatus:
    """Where a release line stands on the remote: its branch, cut point, version, tags, the
    commits since the newest RC (or tag, or cut) and the command to run next.  Reads only."""
    line, remote = request.line, request.remote
    trunk, version_file = request.trunk, request.version_file
    state = RemoteState.read(git, remote)
    branch = state.branch(line.branch)
    orig = state.branch(line.orig_branch)
    tags = tuple(state.tags(line))
    if branch is None:
        return LineStatus(
            line=line,
            remote=remote,
            branch=None,
            orig=orig,
            cut_point=orig,
            version=None,
            tags=tags,
            newest_rc=None,
            since=(),
            since_label="",
            next_command=f"relforge release cut {line} --execute",
        )
    trunk_tip = state.branch(trunk)
    state.ensure(branch, orig, trunk_tip, *(t.commit for t in tags))
    cut = orig or (git.merge_base(branch, trunk_tip) if trunk_tip else None)
    text = git.read_file(branch, version_file)
    version = read_version(text, where=f"{remote}/{line.branch}:{version_file}") if text else None
    working = Version(version.base_version) if version else Version(f"{line}.0")
    rcs = rcs_of(tags, working)
    newest = rcs[-1] if rcs else None
    on_branch = [t for t in tags if git.is_ancestor(t.commit, branch)]
    anchor = newest or (on_branch[-1] if on_branch else None)
    start = anchor.commit if anchor else cut
    since = tuple(commits(git, f"{start}..{branch}" if start else branch))
    final = final_of(tags, working)
    if final is not None:
        patch = f"{working.major}.{working.minor}.{working.micro + 1}"
        next_command = f"relforge release patch {patch} --execute"
    elif newest is None or since:
        next_command = f"relforge release tag {working} --rc --execute"
    else:
        next_command = f"relforge release tag {working} --final --execute"
    return LineStatus(
        line=line,
        remote=remote,
        branch=branch,
        orig=orig,
        cut_point=cut,
        version=version,
        tags=tags,
        newest_rc=newest,
        since=since,
        since_label=anchor.name if anchor else "the cut",
        next_command=next_command,
    )
