"""Version stamping per channel: dev, nightly (version.txt base), test (RC tag), release refused."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest
from packaging.version import Version

from relforge.builders.version import (
    BuildChannel,
    find_rc_tag,
    rc_base,
    stamp_version,
    version_base,
)
from relforge.errors import ConfigError, RefusedError, UsageError
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from tests.conftest import EXAMPLE
from tests.gitrepos import git, work_tree

DAY = datetime.date(2026, 10, 2)


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(EXAMPLE)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository whose version.txt says 1.0.0a0."""
    return work_tree(tmp_path / "project", {"version.txt": "1.0.0a0\n"}, message="start")


def stamp(matrix: Matrix, channel: BuildChannel, base: str, local: str = "cu130") -> str:
    return stamp_version(
        channel,
        matrix=matrix,
        release=matrix.release("1.0"),
        base=Version(base),
        local=local,
        date=DAY,
    )


def test_dev_nightly_and_test_versions(matrix: Matrix) -> None:
    assert stamp(matrix, "dev", "1.0.0a0") == "1.0.0.dev0+cu130"
    assert stamp(matrix, "nightly", "1.0.0a0") == "1.0.0.dev20261002+cu130"
    assert stamp(matrix, "test", "1.0.1", "cpu") == "1.0.1+cpu"


def test_release_builds_are_refused(matrix: Matrix) -> None:
    with pytest.raises(RefusedError) as caught:
        stamp(matrix, "release", "1.0.0")
    assert caught.value.exit_code == 5
    assert "promoted" in caught.value.message


def test_nightly_base_comes_from_version_txt(matrix: Matrix, repo: Path) -> None:
    base = version_base("nightly", matrix=matrix, release=matrix.release("1.0"), source=repo)
    assert (str(base.version), base.origin) == ("1.0.0a0", "version.txt")
    (repo / "version.txt").write_text("one point oh\n")
    with pytest.raises(ConfigError, match="not a PEP 440 version") as caught:
        version_base("dev", matrix=matrix, release=matrix.release("1.0"), source=repo)
    assert "version.txt:1:1" in caught.value.render()


def test_without_version_txt_the_release_version_is_the_base(
    matrix: Matrix, tmp_path: Path
) -> None:
    base = version_base("dev", matrix=matrix, release=matrix.release("1.0"), source=tmp_path)
    assert str(base.version) == "1.0.0"


def test_test_channel_reads_the_rc_tag_at_head(matrix: Matrix, repo: Path) -> None:
    release = matrix.release("1.0")
    with pytest.raises(UsageError, match="RC tag"):
        version_base("test", matrix=matrix, release=release, source=repo)
    git(repo, "tag", "v1.0.0-rc1")
    git(repo, "tag", "v1.0.0-rc2")
    git(repo, "tag", "not-a-version")
    assert find_rc_tag(repo) == "v1.0.0-rc2"
    base = version_base("test", matrix=matrix, release=release, source=repo)
    assert (str(base.version), base.origin) == ("1.0.0", "tag v1.0.0-rc2")
    # an explicit tag wins over the one at HEAD; a tag of another release is refused
    base = version_base("test", matrix=matrix, release=release, source=repo, tag="v1.0.0-rc5")
    assert base.origin == "tag v1.0.0-rc5"
    with pytest.raises(UsageError, match=r"not a tag of release 1\.0"):
        version_base("test", matrix=matrix, release=release, source=repo, tag="v1.1.0-rc1")


def test_an_rc_tag_that_disagrees_with_version_txt_is_refused(matrix: Matrix, repo: Path) -> None:
    """version.txt says 1.0.0a0: an RC of 1.0.3 would label this code 1.0.3 (and promote it)."""
    release = matrix.release("1.0")
    with pytest.raises(RefusedError, match=r"builds 1\.0\.3, but version\.txt") as caught:
        version_base("test", matrix=matrix, release=release, source=repo, tag="v1.0.3-rc1")
    assert caught.value.exit_code == 5 and "version.txt:1:1" in caught.value.render()
    git(repo, "tag", "v1.0.3-rc1")  # the tag at HEAD is checked the same way
    with pytest.raises(RefusedError):
        version_base("test", matrix=matrix, release=release, source=repo)
    (repo / "version.txt").write_text("1.0.3\n")  # after `release patch 1.0.3`
    with pytest.raises(ConfigError, match=r"release 1\.0 of the matrix is 1\.0\.0") as mismatch:
        version_base("test", matrix=matrix, release=release, source=repo)
    assert mismatch.value.key == "releases.1.0.version"  # validation would expect 1.0.0
    patch = dataclasses.replace(release, version=Version("1.0.3"))
    base = version_base("test", matrix=matrix, release=patch, source=repo)
    assert (str(base.version), base.origin) == ("1.0.3", "tag v1.0.3-rc1")


def test_a_nightly_of_another_version_than_the_release_is_refused(
    matrix: Matrix, repo: Path
) -> None:
    """main after the cut of 1.0 says 1.1.0a0: its nightlies are no nightlies of release 1.0."""
    (repo / "version.txt").write_text("1.1.0a0\n")
    release = matrix.release("1.0")
    with pytest.raises(ConfigError, match=r"version\.txt gives version 1\.1\.0a0"):
        version_base("nightly", matrix=matrix, release=release, source=repo)
    base = version_base("dev", matrix=matrix, release=release, source=repo)  # local: anything
    assert str(base.version) == "1.1.0a0"


def test_tag_is_only_for_the_test_channel(matrix: Matrix, repo: Path) -> None:
    channels: tuple[BuildChannel, ...] = ("nightly", "dev")
    for channel in channels:
        with pytest.raises(UsageError, match="--tag"):
            version_base(
                channel,
                matrix=matrix,
                release=matrix.release("1.0"),
                source=repo,
                tag="v1.0.0-rc1",
            )


@pytest.mark.parametrize(
    "tag",
    [
        "1.0.0-rc1",
        "v1.0.0",
        "v1.0.0-rc1.dev3",
        "v1.0.0a1",
        "vfoo",
        # what `relforge release` would not take as an RC tag either (one parser for both)
        "v1.0-rc1",
        "v1!1.0.0-rc1",
        "v1.0.0-rc1.post1",
        "v1.0.0-rc1+cpu",
    ],
)
def test_rc_base_rejects_non_rc_tags(tag: str) -> None:
    with pytest.raises(UsageError, match="is not an RC tag"):
        rc_base(tag, "1.0")


def test_find_rc_tag_skips_what_is_not_an_rc_tag(repo: Path) -> None:
    """The highest *RC tag* at HEAD, read as `relforge release tag` reads tags: a higher
    spelling that is no RC tag must not shadow the real one (and then fail the build)."""
    for tag in ("v1.0.0-rc2", "v1.0.0rc9.post1", "v1.0-rc9", "v1.0.0", "v1.0.0rc10.dev1"):
        git(repo, "tag", tag)
    assert find_rc_tag(repo) == "v1.0.0-rc2"
    git(repo, "tag", "v1.0.0rc10")  # the other spelling of an RC counts, and 10 > 2
    assert find_rc_tag(repo) == "v1.0.0rc10"


def test_find_rc_tag_outside_git(tmp_path: Path) -> None:
    assert find_rc_tag(tmp_path) is None


@pytest.mark.parametrize("channel", ["dev", "nightly"])
def test_a_version_file_of_x_y_builds_x_y_0(
    matrix: Matrix, tmp_path: Path, channel: BuildChannel
) -> None:
    """`1.0` in version.txt was stamped 1.0.devN, which validation (expecting the matrix's
    1.0.0.devN) refused: the file is read as 1.0.0 (relforge.versiontags.pad_release)."""
    (tmp_path / "version.txt").write_text("1.0\n")
    release = matrix.release("1.0")
    base = version_base(channel, matrix=matrix, release=release, source=tmp_path)
    assert str(base.version) == "1.0.0"
    day = "dev0" if channel == "dev" else f"dev{DAY:%Y%m%d}"
    assert stamp(matrix, channel, str(base.version), "cpu") == f"1.0.0.{day}+cpu"
