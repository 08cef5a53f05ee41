"""Version stamping: the version a cell's artifact carries on each build channel.

- `test`: the RC tag `vX.Y.Z-rcN` at HEAD → `X.Y.Z+<variant>` (RC wheels carry the final version);
- `nightly`: version.txt's base → `X.Y.Z.devYYYYMMDD+<variant>`;
- `dev` (local builds): version.txt's base → `X.Y.Z.dev0+<variant>`;
- `release`: refused — release artifacts are promoted from `test`, never rebuilt.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version
from typing_extensions import assert_never

from relforge.errors import ConfigError, RefusedError, Span, UsageError
from relforge.git import GitMissing, run_git
from relforge.gitfaults import fault_of
from relforge.matrix.expand import channel_version, dev_version, nightly_date
from relforge.matrix.schema import Matrix, Release
from relforge.versiontags import pad_release, rc_version

BuildChannel = Literal["nightly", "test", "dev", "release"]
BUILD_CHANNELS: tuple[BuildChannel, ...] = ("nightly", "test", "dev", "release")


@dataclasses.dataclass(frozen=True, kw_only=True)
class VersionBase:
    """Where the X.Y.Z of a build comes from, for the preamble and the manifest."""

    version: Version
    origin: str  # "version.txt", "tag v1.0.0-rc2", "matrix release 1.0"


def release_refused() -> RefusedError:
    """The error for a `release` build: release artifacts are promoted, never rebuilt."""
    return RefusedError(
        "release artifacts are promoted from the test channel, never rebuilt",
        key="--channel release",
        hint="build the RC with --channel test, validate it, then promote it",
    )


def version_base(
    channel: BuildChannel,
    *,
    matrix: Matrix,
    release: Release,
    source: Path,
    tag: str | None = None,
) -> VersionBase:
    """The X.Y.Z the channel stamps: from the RC tag (test) or version.txt (nightly, dev)."""
    match channel:
        case "release":
            raise release_refused()
        case "test":
            found = tag or find_rc_tag(source)
            if found is None:
                raise UsageError(
                    f"test-channel builds come from an RC tag vX.Y.Z-rcN, and HEAD of {source} "
                    "carries none",
                    key="--channel test",
                    hint="check out the RC tag, or pass --tag vX.Y.Z-rcN",
                )
            base = rc_base(found, release.name)
            _require_version_file_agrees(source / matrix.project.version_file, base, found)
            _require_release_version(release, base, f"the RC tag {found}")
            return VersionBase(version=base, origin=f"tag {found}")
        case "nightly" | "dev":
            if tag is not None:
                raise UsageError(
                    f"--tag names the RC a test-channel build stamps; {channel} builds take "
                    f"their version from {matrix.project.version_file}",
                    key="--tag",
                    hint="drop --tag, or build with --channel test",
                )
            base_of = _version_file_base(source / matrix.project.version_file, release)
            if channel == "nightly":
                _require_release_version(release, base_of.version, base_of.origin)
            return base_of
        case _:
            assert_never(channel)


def _require_release_version(release: Release, base: Version, origin: str) -> None:
    """Validation expects the matrix release's X.Y.Z (`releases.X.Y.version`, default X.Y.0):
    a build stamped with another one could never pass it."""
    if Version(base.base_version) != release.full_version:
        raise ConfigError(
            f"{origin} gives version {base}, but release {release.name} of the matrix is "
            f"{release.full_version}",
            key=f"releases.{release.name}.version",
            hint=f"set `version: {base.base_version}` on release {release.name} in the matrix "
            "(a patch release), or build the release the source is for",
        )


def stamp_version(
    channel: BuildChannel,
    *,
    matrix: Matrix,
    release: Release,
    base: Version,
    local: str,
    date: datetime.date | None = None,
) -> str:
    """The PEP 440 version of one cell's artifact on `channel` (`local` is the variant's label)."""
    final = Version(base.base_version)
    match channel:
        case "release":
            raise release_refused()
        case "dev":
            text = dev_version(str(final), local)
        case "nightly" | "test":
            scheme = matrix.channels.get(channel).version_scheme
            day = date or nightly_date()
            text = channel_version(dataclasses.replace(release, version=final), scheme, local, day)
        case _:
            assert_never(channel)
    return str(Version(text))


def rc_base(tag: str, release: str) -> Version:
    """`v2.9.0-rc3` → 2.9.0, checked to be an RC of release `2.9`."""
    version = rc_version(tag)
    if version is None:
        raise UsageError(f"{tag!r} is not an RC tag like v2.9.0-rc3", key="--tag")
    if version.release[:2] != Version(release).release[:2]:
        raise UsageError(f"{tag!r} is not a tag of release {release}", key="--tag")
    return Version(version.base_version)


def find_rc_tag(source: Path) -> str | None:
    """The highest RC tag pointing at HEAD of the git repository holding `source`."""
    try:
        done = run_git("-C", str(source), "tag", "--points-at", "HEAD")
    except (GitMissing, OSError):
        return None
    if done.code != 0:
        fault = fault_of(done)  # a disk or permission fault is no "HEAD carries no tag"
        if fault is not None:
            raise fault
        return None
    candidates = [(v, tag) for tag in done.out.split() if (v := rc_version(tag)) is not None]
    return max(candidates)[1] if candidates else None


def _require_version_file_agrees(path: Path, base: Version, tag: str) -> None:
    """An RC's wheels carry the final version and are promoted as the release: the source must
    be the one the tag names (version.txt says X.Y.Z, e.g. 2.9.1 or 2.9.1a0), or the artifacts
    would be labelled with a version their code is not."""
    if not path.is_file():
        return
    found = _version_file_base(path, None).version
    if Version(found.base_version) != base:
        raise RefusedError(
            f"the RC tag {tag} builds {base}, but {path.name} of the source says {found}",
            where=Span(str(path), 1, 1),
            key="--tag",
            hint=f"check out {tag} (or the release branch it was tagged on), or bump "
            f"{path.name} first (relforge release patch {base} --execute)",
        )


def _version_file_base(path: Path, release: Release | None) -> VersionBase:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        assert release is not None, path
        return VersionBase(version=release.full_version, origin=f"matrix release {release.name}")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", where=Span(str(path))) from None
    try:
        version = pad_release(Version(text))  # 1.23 stamps 1.23.0.devN, as the matrix expects
    except InvalidVersion:
        raise ConfigError(
            f"{text!r} is not a PEP 440 version",
            where=Span(str(path), 1, 1),
            hint="version.txt holds one version such as 2.9.0 or 2.10.0a0",
        ) from None
    return VersionBase(version=version, origin=path.name)
