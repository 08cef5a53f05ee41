"""Release tag names: `vX.Y.Z` (a release) and `vX.Y.Z-rcN` (a release candidate), read by
`packaging`, so `v2.9.0-rc1` and `v2.9.0rc1` are the same RC.  The builder (the RC a test build
stamps) and the release commands (cut, tag, status) write and read tags here and nowhere else.
`pad_release` is the one reading of a version file's X.Y as X.Y.0 (`relforge init` writes it,
`relforge build` stamps it, validation expects the matrix's X.Y.Z)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Tag:
    """A release tag on a remote: its name, the commit it points at and what version it is."""

    name: str
    commit: str
    version: Version

    @property
    def base(self) -> Version:
        return Version(self.version.base_version)

    @property
    def rc(self) -> int | None:
        """N of an RC tag, None for a final."""
        pre = self.version.pre
        return pre[1] if pre is not None else None

    @property
    def is_final(self) -> bool:
        return self.version.pre is None


def rc_tag(version: Version, number: int) -> str:
    """The RC tag relforge writes: `v2.9.0-rc3`."""
    return f"v{version}-rc{number}"


def final_tag(version: Version) -> str:
    """The release tag relforge writes: `v2.9.0`."""
    return f"v{version}"


def parse_tag(name: str, commit: str) -> Tag | None:
    """A `v…` tag that is a release (`vX.Y.Z`) or an RC (`vX.Y.Z-rcN`); None for any other tag."""
    if not name.startswith("v"):
        return None
    try:
        version = Version(name[1:])
    except InvalidVersion:
        return None
    plain = (
        len(version.release) == 3
        and not version.epoch
        and version.post is None
        and version.dev is None
        and not version.local
    )
    if not plain or (version.pre is not None and version.pre[0] != "rc"):
        return None
    return Tag(name, commit, version)


def rc_version(name: str) -> Version | None:
    """`v2.9.0-rc3` → 2.9.0rc3; None for a final tag or any tag that is not an RC tag."""
    tag = parse_tag(name, "")
    return tag.version if tag is not None and tag.rc is not None else None


def pad_release(version: Version) -> Version:
    """`version` with a release of at least three parts: 1.23 → 1.23.0, 2 → 2.0.0, 1.23a0 →
    1.23.0a0 (1.2.3 and 1.2.3.4 unchanged).  packaging compares 1.23 equal to 1.23.0, but the
    text differs, and wheels, tags and validation compare text: a version file holding `1.23`
    must stamp `1.23.0.devN`, the version the matrix's release 1.23 expects."""
    if len(version.release) >= 3:
        return version
    text = ".".join(str(part) for part in (*version.release, 0, 0)[:3])
    if version.epoch:
        text = f"{version.epoch}!{text}"
    if version.pre is not None:
        text += f"{version.pre[0]}{version.pre[1]}"
    if version.post is not None:
        text += f".post{version.post}"
    if version.dev is not None:
        text += f".dev{version.dev}"
    if version.local:
        text += f"+{version.local}"
    return Version(text)


def tag_version(name: str) -> Version | None:
    """The version a project's tag names, as setuptools-scm, hatch-vcs and versioningit read
    it: `v1.2.3`, `1.2.3`, `v1.2.3-rc1`, `1.2` (→ 1.2.0); None for any other tag (dev and
    local versions are no release)."""
    text = name[1:] if name[:1] in ("v", "V") and name[1:2].isdigit() else name
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    if version.dev is not None or version.local:
        return None
    return pad_release(version)


def newest_tag(names: Iterable[str]) -> tuple[str, Version] | None:
    """The tag naming the highest version (`tag_version`), with that version; None when none."""
    found = [(v, n) for n in names if (v := tag_version(n)) is not None]
    if not found:
        return None
    version, name = max(found)
    return name, version
