"""Real git repositories for tests: a bare "origin" on disk and clones of it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(cwd),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


@dataclass
class Repos:
    origin: Path
    clone: Path

    def commit(
        self, message: str, files: dict[str, str] | None = None, where: Path | None = None
    ) -> str:
        """Write files, commit everything, return the commit id."""
        repo = where or self.clone
        for name, text in (files or {f"{message.replace(' ', '_')}.txt": message}).items():
            path = repo / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)
        return git(repo, "rev-parse", "HEAD")

    def another_clone(self, name: str) -> Path:
        path = self.origin.parent / name
        git(self.origin.parent, "clone", "-q", str(self.origin), str(path))
        configure(path)
        return path


def configure(repo: Path) -> None:
    git(repo, "config", "user.email", "releng@example.org")
    git(repo, "config", "user.name", "Rel Eng")
    git(repo, "config", "commit.gpgsign", "false")


def make_repos(root: Path, files: dict[str, str] | None = None) -> Repos:
    """A bare origin with one commit on `main`, and a clone of it."""
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    clone = root / "clone"
    git(root, "clone", "-q", str(origin), str(clone))
    configure(clone)
    git(clone, "checkout", "-q", "-b", "main")
    repos = Repos(origin, clone)
    repos.commit("initial", files or {"version.txt": "1.0.0a0\n"})
    git(clone, "push", "-q", "origin", "main")
    return repos


def work_tree(root: Path, files: dict[str, str], *, message: str = "one") -> Path:
    """A repository of its own at `root` (no origin) on `main`, with `files` committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    configure(root)
    Repos(origin=root, clone=root).commit(message, files)
    return root
