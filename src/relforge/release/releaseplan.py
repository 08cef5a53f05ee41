"""The typed plan every mutating `release` command builds before it changes anything.

A plan holds objects to create (commits, annotated tags) and remote refs to set, each with the
value the remote must still have (None: the ref must not exist yet).  A dry run prints it; with
`--execute` relforge.release.apply creates the objects and pushes every ref in one atomic push.
The remote is the journal: each run recomputes the plan from the remote's refs, so a rerun after
success finds nothing to do and a run killed before the push starts over cleanly.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class FileChange:
    path: str
    old: str | None
    new: str

    def diff(self) -> str:
        """A unified diff of the change (`a/` and `b/` prefixes like git)."""
        old = (self.old or "").splitlines(keepends=True)
        new = self.new.splitlines(keepends=True)
        lines = difflib.unified_diff(
            old, new, "/dev/null" if self.old is None else f"a/{self.path}", f"b/{self.path}"
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True, kw_only=True)
class NewCommit:
    """A commit to create on top of an existing commit."""

    key: str  # names the commit inside the plan, e.g. "release-only"
    branch: str  # the branch it is meant for (shown to people)
    parent: str
    message: str
    changes: tuple[FileChange, ...]

    @property
    def subject(self) -> str:
        return self.message.splitlines()[0]


@dataclass(frozen=True, kw_only=True)
class NewTag:
    """An annotated tag object to create (its ref is set by a SetRef)."""

    name: str
    commit: str
    message: str


@dataclass(frozen=True, kw_only=True)
class SetRef:
    """Set a ref on the remote: to an existing object id, or to an object the plan creates."""

    ref: str
    old: str | None  # what the remote must still hold; None: the ref must not exist
    new: str | NewCommit | NewTag
    why: str

    @property
    def short(self) -> str:
        return self.ref.removeprefix("refs/heads/").removeprefix("refs/tags/")


Action = NewCommit | NewTag | SetRef


@dataclass(frozen=True, kw_only=True)
class ReleasePlan:
    command: str  # e.g. "release cut 2.9"
    remote: str
    actions: tuple[Action, ...] = ()
    done: tuple[str, ...] = ()  # what is already in place (reported, left alone)
    notes: tuple[str, ...] = ()  # warnings worth reading before --execute
    next_step: str = ""

    @property
    def empty(self) -> bool:
        return not self.actions

    @property
    def refs(self) -> tuple[SetRef, ...]:
        return tuple(a for a in self.actions if isinstance(a, SetRef))

    def to_json(self, *, executed: bool = False, results: dict[str, str] | None = None) -> Any:
        return {
            "command": self.command,
            "remote": self.remote,
            "executed": executed,
            "nothing_to_do": self.empty,
            "actions": [_action_json(a) for a in self.actions],
            "done": list(self.done),
            "notes": list(self.notes),
            "next": self.next_step,
            "results": results or {},
        }


def target_text(new: str | NewCommit | NewTag) -> str:
    match new:
        case NewCommit():
            return f"new commit {new.key!r}"
        case NewTag():
            return f"new tag object {new.name} → {new.commit[:12]}"
        case str():
            return new[:12]


def _action_json(action: Action) -> dict[str, Any]:
    match action:
        case NewCommit():
            return {
                "action": "commit",
                "key": action.key,
                "branch": action.branch,
                "parent": action.parent,
                "message": action.message,
                "changes": [
                    {"path": c.path, "created": c.old is None, "diff": c.diff()}
                    for c in action.changes
                ],
            }
        case NewTag():
            return {
                "action": "tag",
                "name": action.name,
                "commit": action.commit,
                "message": action.message,
            }
        case SetRef():
            new: dict[str, Any]
            match action.new:
                case NewCommit():
                    new = {"commit": action.new.key}
                case NewTag():
                    new = {"tag": action.new.name}
                case str():
                    new = {"object": action.new}
            return {
                "action": "push",
                "ref": action.ref,
                "old": action.old,
                **new,
                "why": action.why,
            }


@dataclass
class PlanBuilder:
    """Collects a plan's parts while a command inspects the repository."""

    command: str
    remote: str
    actions: list[Action] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    next_step: str = ""

    def build(self) -> ReleasePlan:
        return ReleasePlan(
            command=self.command,
            remote=self.remote,
            actions=tuple(self.actions),
            done=tuple(self.done),
            notes=tuple(self.notes),
            next_step=self.next_step,
        )
