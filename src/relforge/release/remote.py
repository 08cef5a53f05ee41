"""What the remote holds: one `git ls-remote` snapshot that every release command plans from.

Local branches and tags are not trusted (they may be stale or unpushed); commits the snapshot
names are downloaded when missing, without creating or moving any local ref.
"""

from __future__ import annotations

from dataclasses import dataclass

from relforge.errors import ConfigError
from relforge.git import Git
from relforge.release.versions import Line, release_tags
from relforge.versiontags import Tag


@dataclass(frozen=True)
class RemoteState:
    git: Git
    remote: str
    refs: dict[str, str]  # refname → commit (tags peeled)

    @classmethod
    def read(cls, git: Git, remote: str) -> RemoteState:
        return cls(git, remote, git.remote_refs(remote, "refs/heads/*", "refs/tags/*"))

    def branch(self, name: str) -> str | None:
        return self.refs.get(f"refs/heads/{name}")

    def tag(self, name: str) -> str | None:
        return self.refs.get(f"refs/tags/{name}")

    def tags(self, line: Line | None = None) -> list[Tag]:
        return release_tags(self.refs, line)

    def require_branch(self, name: str, hint: str) -> str:
        commit = self.branch(name)
        if commit is None:
            raise ConfigError(f"{self.remote} has no branch {name}", key="--remote", hint=hint)
        return commit

    def resolve(self, name: str, flag: str) -> str:
        """A branch or tag of the remote → commit."""
        found = self.branch(name) or self.tag(name) or self.refs.get(name)
        if found is None:
            raise ConfigError(
                f"{self.remote} has no branch or tag {name!r}",
                key=flag,
                hint="give a branch or tag that exists on the remote",
            )
        return found

    def ensure(self, *commits: str | None) -> None:
        """Make sure the named commits are present locally (download them if not)."""
        missing = [c for c in commits if c and not self.git.has_commit(c)]
        if not missing:
            return
        wanted = sorted({ref for ref, sha in self.refs.items() if sha in missing})
        self.git.fetch_objects(self.remote, wanted)
        still = [c for c in missing if not self.git.has_commit(c)]
        if still:
            raise ConfigError(
                f"{self.remote} changed while relforge was reading it ({still[0][:12]} is gone)",
                key="--remote",
                hint="rerun the command",
            )
