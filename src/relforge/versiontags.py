"""Release tag names: `vX.Y.Z` (a release) and `vX.Y.Z-rcN` (a release candidate), read by
`packaging`, so `v2.9.0-rc1` and `v2.9.0rc1` are the same RC.  The builder (the RC a test build
stamps) and the release commands (cut, tag, status) write and read tags here and nowhere else."""

from __future__ import annotations

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
