"""Every git run relforge makes: argv lists (never a shell), C locale, no prompts, and failures
turned into errors a user can act on (missing remote, auth failure, rejected push, detached HEAD;
a full or read-only disk and an unreachable remote are environment faults, exit 6).

`Git` works in one repository (release, bot); `run_git`/`run_git_bytes` are the bare runs the
builder (source files, the RC tag at HEAD) and the matrix loader (`REV:PATH`) make.  What a
failure means is `relforge.gitfaults`.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from relforge.errors import ConfigError
from relforge.gitfaults import GitBytes, GitResult, classify


class GitMissing(ConfigError):
    """No `git` executable on PATH (exit 2)."""


class Git:
    """Runs git in one repository."""

    def __init__(self, repo: Path | str) -> None:
        path = Path(repo)
        if not path.is_dir():
            raise ConfigError(f"{path} is not a directory", key="--repo")
        probe = run_git("-C", str(path), "rev-parse", "--show-toplevel")
        if probe.code != 0:
            raise ConfigError(
                f"{path} is not inside a git repository",
                key="--repo",
                hint="pass --repo DIR with the project's clone",
            )
        self.root = Path(probe.out.strip())

    def result(
        self, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
    ) -> GitResult:
        """Run git; return the result whatever the exit code."""
        return run_git("-C", str(self.root), *args, env=env, stdin=stdin)

    def run(
        self, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
    ) -> str:
        """Run git and return stdout; a failure raises the most specific error we can name."""
        done = self.result(*args, env=env, stdin=stdin)
        if done.code != 0:
            raise classify(done)
        return done.out

    def ok(self, *args: str) -> bool:
        return self.result(*args).code == 0

    def commit_of(self, ref: str) -> str | None:
        """The commit a ref names, or None if it names nothing."""
        done = self.result("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return done.out.strip() if done.code == 0 else None

    def current_branch(self) -> str | None:
        """The checked-out branch, or None on a detached HEAD."""
        done = self.result("symbolic-ref", "--quiet", "--short", "HEAD")
        return done.out.strip() if done.code == 0 else None

    def require_branch(self) -> str:
        branch = self.current_branch()
        if branch is None:
            raise ConfigError(
                f"{self.root} has a detached HEAD",
                key="--repo",
                hint="check out a branch first (git switch BRANCH)",
            )
        return branch

    def is_dirty(self) -> bool:
        """Tracked files changed or staged (untracked files do not count)."""
        return bool(self.run("status", "--porcelain", "--untracked-files=no").strip())

    def remote_url(self, remote: str) -> str:
        done = self.result("remote", "get-url", remote)
        if done.code != 0:
            known = self.run("remote").split() or ["none"]
            raise ConfigError(
                f"no git remote named {remote!r} in {self.root}",
                key="--remote",
                hint=f"remotes: {', '.join(known)}",
            )
        return done.out.strip()

    def remote_refs(self, remote: str, *patterns: str) -> dict[str, str]:
        """Refs on the remote (ls-remote) → commit; annotated tags are peeled to their commit."""
        self.remote_url(remote)
        out = self.run("ls-remote", remote, *patterns)
        refs: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref.endswith("^{}"):
                refs[ref[:-3]] = sha  # the peeled commit wins over the tag object
            else:
                refs.setdefault(ref, sha)
        return refs

    def fetch(self, remote: str, *refspecs: str) -> None:
        self.remote_url(remote)
        self.run("fetch", "--quiet", remote, *refspecs)

    def push(
        self,
        remote: str,
        refspecs: Sequence[str],
        *,
        leases: Mapping[str, str | None] | None = None,
        token: str | None = None,
    ) -> None:
        """Push atomically: every ref updates or none does.  `leases` (ref → the value the
        remote must still hold, None: the ref must not exist) guard against a remote that moved.
        With `token`, an https remote is authenticated with it (as actions/checkout does)
        through environment-only git config: not written to .git/config, not in the process
        list."""
        env = token_env(self.remote_url(remote), token)
        guard = [f"--force-with-lease={ref}:{old or ''}" for ref, old in (leases or {}).items()]
        self.run("push", "--atomic", "--porcelain", *guard, remote, *refspecs, env=env)

    # -- reading objects without touching refs, index or work tree ---------------------------

    def has_commit(self, sha: str) -> bool:
        return self.ok("cat-file", "-e", f"{sha}^{{commit}}")

    def fetch_objects(self, remote: str, refs: Sequence[str]) -> None:
        """Download the objects of some remote refs without creating or moving any ref
        (no remote-tracking update, no FETCH_HEAD)."""
        self.remote_url(remote)
        self.run(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-auto-gc",
            "--refmap=",
            remote,
            *refs,
        )

    def read_file(self, commit: str, path: str) -> str | None:
        """The text of `path` at `commit`, or None if the commit has no such file."""
        done = self.result("cat-file", "blob", f"{commit}:{path}")
        return done.out if done.code == 0 else None

    def list_files(self, commit: str, *prefixes: str) -> list[str]:
        """Paths of the files in `commit`'s tree (below `prefixes` when given)."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", commit, "--", *prefixes)
        return [p for p in out.split("\0") if p]

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        done = self.result("merge-base", "--is-ancestor", ancestor, descendant)
        if done.code not in (0, 1):
            raise classify(done)
        return done.code == 0

    def ahead_behind(self, local: str, remote: str) -> tuple[int, int]:
        """How many commits `local` has that `remote` lacks, and how many the other way."""
        out = self.run("rev-list", "--left-right", "--count", f"{local}...{remote}")
        ahead, behind = out.split()
        return int(ahead), int(behind)

    def untracked(self, *paths: str) -> list[str]:
        """Files under `paths` in the work tree that git does not track (ignored ones left out)."""
        out = self.run("ls-files", "--others", "--exclude-standard", "-z", "--", *paths)
        return [p for p in out.split("\0") if p]

    def merge_base(self, a: str, b: str) -> str | None:
        done = self.result("merge-base", a, b)
        return done.out.strip() if done.code == 0 else None

    # -- writing objects (not refs): used only when a plan is executed -----------------------

    def commit_files(
        self,
        parent: str,
        files: Mapping[str, str],
        message: str,
        *,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """A new commit on `parent` with `files` (path → text) changed; returns its id.

        Works on a temporary index outside the repository, so the work tree, the index and
        every ref stay as they are; only objects are written.  `env` adds to the commit's
        environment (an author and committer identity on a runner that has none)."""
        with tempfile.TemporaryDirectory(prefix="relforge-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.run("read-tree", parent, env=env)
            for path, text in files.items():
                listed = self.run("ls-tree", parent, "--", path).split()
                mode = listed[0] if listed else "100644"
                blob = self.run("hash-object", "-w", "--no-filters", "--stdin", stdin=text)
                self.run(
                    "update-index", "--add", "--cacheinfo", f"{mode},{blob.strip()},{path}", env=env
                )
            tree = self.run("write-tree", env=env).strip()
        return self.run(
            "commit-tree", tree, "-p", parent, "-F", "-", stdin=message, env=env
        ).strip()

    def make_tag(self, name: str, commit: str, message: str) -> str:
        """An annotated tag object for `commit` (no ref is created); returns its id."""
        ident = self.run("var", "GIT_COMMITTER_IDENT").strip()
        text = f"object {commit}\ntype commit\ntag {name}\ntagger {ident}\n\n{message}\n"
        return self.run("mktag", stdin=text).strip()


def token_env(url: str, token: str | None) -> dict[str, str] | None:
    """Environment that makes git send `token` to the host of an https `url` (else None)."""
    parts = urlsplit(url)
    if not token or parts.scheme != "https" or not parts.hostname:
        return None
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.https://{parts.netloc}/.extraheader",
        "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
    }


def run_git(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> GitResult:
    """Run `git ARGS` (text output); the result whatever the exit code.  GitMissing when git is
    not installed."""
    done = _spawn(["git", *args], cwd=cwd, env=env, stdin=stdin, text=True)
    return GitResult(tuple(done.args), done.returncode, done.stdout, done.stderr)


def run_git_bytes(*args: str, cwd: Path | str | None = None) -> GitBytes:
    """Run `git ARGS` and keep its output as bytes (a blob, a `-z` list of paths)."""
    done = _spawn(["git", *args], cwd=cwd, env=None, stdin=None, text=False)
    err = done.stderr.decode("utf-8", "replace")
    return GitBytes(tuple(done.args), done.returncode, done.stdout, err)


def _spawn(
    argv: list[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: str | None,
    text: bool,
) -> subprocess.CompletedProcess[Any]:
    full_env = {
        **os.environ,
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "SSH_ASKPASS": "true",
        "GIT_OPTIONAL_LOCKS": "0",  # `git status` must not refresh (rewrite) the index
        **(env or {}),
    }
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=text,
            env=full_env,
            input=stdin,
            cwd=cwd,
            check=False,
        )
    except FileNotFoundError as exc:
        if exc.filename != argv[0]:  # the working directory is what is missing
            raise
        raise GitMissing("git is not installed (no `git` on PATH)") from None
