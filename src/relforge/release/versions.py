"""Release lines (X.Y), release versions (X.Y.Z), their branches and tags.

Every version is read by `packaging`; tag names are written and read by `relforge.versiontags`
(`vX.Y.Z-rcN`, `vX.Y.Z`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from relforge.errors import UsageError
from relforge.versiontags import Tag, parse_tag

if TYPE_CHECKING:
    from relforge.git import Git


@dataclass(frozen=True, order=True)
class Line:
    """A release line X.Y: one release branch, its patch releases and their RCs."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def branch(self) -> str:
        return f"release/{self}"

    @property
    def orig_branch(self) -> str:
        """The frozen marker of the cut point."""
        return f"orig/release/{self}"

    @property
    def next_dev(self) -> Version:
        """What the main line's version.txt says after this line is cut."""
        return Version(f"{self.major}.{self.minor + 1}.0a0")

    def contains(self, version: Version) -> bool:
        return version.release[:2] == (self.major, self.minor)


def _plain(text: str, parts: int, flag: str, example: str) -> Version:
    try:
        version = Version(text)
    except InvalidVersion:
        raise UsageError(f"{text!r} is not a version like {example}", key=flag) from None
    if (
        len(version.release) != parts
        or version.epoch
        or version.pre
        or version.post is not None
        or version.dev is not None
        or version.local
    ):
        raise UsageError(f"{text!r} is not a plain version like {example}", key=flag)
    return version


def parse_line(text: str, flag: str = "X.Y") -> Line:
    """`2.9` → Line(2, 9); anything else is a usage error."""
    version = _plain(text, 2, flag, "2.9")
    return Line(version.major, version.minor)


def parse_release(text: str, flag: str = "X.Y.Z") -> Version:
    """`2.9.1` → Version; RC, dev or local versions are refused (the command adds the RC)."""
    return _plain(text, 3, flag, "2.9.1")


def line_of(version: Version) -> Line:
    return Line(version.major, version.minor)


def release_tags(refs: Mapping[str, str], line: Line | None = None) -> list[Tag]:
    """The release tags among `refs/tags/*` refs (→ commit), optionally of one line, oldest
    version first (RCs before their final)."""
    found = []
    for ref, commit in refs.items():
        if not ref.startswith("refs/tags/"):
            continue
        tag = parse_tag(ref.removeprefix("refs/tags/"), commit)
        if tag is not None and (line is None or line.contains(tag.version)):
            found.append(tag)
    return sorted(found, key=lambda t: (t.version, t.name))


def rcs_of(tags: Iterable[Tag], version: Version) -> list[Tag]:
    """The RC tags of one X.Y.Z, lowest N first."""
    found = [t for t in tags if t.base == version and t.rc is not None]
    return sorted(found, key=lambda t: t.version)


def final_of(tags: Iterable[Tag], version: Version) -> Tag | None:
    return next((t for t in tags if t.base == version and t.is_final), None)


def read_version(text: str, *, where: str) -> Version:
    """The version in a version.txt (first non-empty line)."""
    from relforge.errors import ConfigError

    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    try:
        return Version(first)
    except InvalidVersion:
        raise ConfigError(
            f"{first!r} is not a version", key=where, hint="version.txt holds one line like 2.9.0a0"
        ) from None


def version_at(git: Git, commit: str, path: str, label: str, line: Line) -> tuple[str, Version]:
    """The text and version of `path` (version.txt) at `commit`; a ConfigError with the fix
    when the file is missing (`label` names the commit for messages, e.g. origin/main)."""
    text = git.read_file(commit, path)
    if text is None:
        from relforge.errors import ConfigError

        raise ConfigError(
            f"{label} has no file {path}: relforge reads the release's X.Y.Z from it",
            key="--version-file",
            hint=f"commit one line like {line}.0a0 to {path} on {label} and push it "
            "(`relforge init` writes it), or name your version file with --version-file PATH",
        )
    return text, read_version(text, where=f"{label}:{path}")


def with_release(old: Version, new_release: Version) -> str:
    """`new_release` written in the style of `old`: 2.9.0a0 + 2.9.1 → 2.9.1a0."""
    text = str(new_release)
    if old.pre is not None:
        text += f"{old.pre[0]}{old.pre[1]}"
    return text
