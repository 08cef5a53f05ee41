"""The one parser of platform tags (relforge.wheelplatform) and the modules that read tags
through it."""

from __future__ import annotations

import pytest

from relforge.axiswheels import platforms
from relforge.deps.targets import expand_platform
from relforge.validate.platformtags import macos_tag
from relforge.validate.tagpolicy import policy_for_tag
from relforge.wheelplatform import (
    LEGACY_MANYLINUX,
    Family,
    ParsedPlatform,
    legacy_manylinux,
    parse_platform_tag,
)


@pytest.mark.parametrize(
    ("tag", "family", "version", "arch", "legacy"),
    [
        ("manylinux_2_28_x86_64", "manylinux", (2, 28), "x86_64", None),
        ("manylinux_2_17_aarch64", "manylinux", (2, 17), "aarch64", None),
        ("manylinux_2_39_ppc64le", "manylinux", (2, 39), "ppc64le", None),
        ("manylinux1_x86_64", "manylinux", (2, 5), "x86_64", "manylinux1"),
        ("manylinux2010_i686", "manylinux", (2, 12), "i686", "manylinux2010"),
        ("manylinux2014_aarch64", "manylinux", (2, 17), "aarch64", "manylinux2014"),
        ("musllinux_1_2_x86_64", "musllinux", (1, 2), "x86_64", None),
        ("macosx_11_0_arm64", "macosx", (11, 0), "arm64", None),
        ("macosx_10_13_universal2", "macosx", (10, 13), "universal2", None),
        ("macosx_10_9_x86_64", "macosx", (10, 9), "x86_64", None),
        ("win_amd64", "win", None, "amd64", None),
        ("win_arm64", "win", None, "arm64", None),
        ("win32", "win", None, "x86", None),
        ("linux_x86_64", "linux", None, "x86_64", None),
    ],
)
def test_each_kind_of_tag(
    tag: str, family: Family, version: tuple[int, int] | None, arch: str, legacy: str | None
) -> None:
    assert parse_platform_tag(tag) == ParsedPlatform(
        tag=tag,
        family=family,
        version=version,
        arch=arch,
        legacy=legacy,
    )


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "any",
        "manylinux",
        "manylinux_2_28",
        "manylinux_2_28_",
        "manylinux_2_x_x86_64",
        "manylinux__28_x86_64",
        "manylinux2015_x86_64",  # not one of PEP 600's legacy aliases
        "manylinux2014",
        "musllinux_1_x86_64",
        "macosx_11_arm64",
        "macosx_11_0_",
        "win_",
        "win64",
        "linux",
        "MANYLINUX_2_28_X86_64",
        "manylinux_2_28_x86_64.manylinux2014_x86_64",  # a compressed set: split it first
        "manylinux_2_28_x86_64\n",
        " manylinux_2_28_x86_64",
        "manylinux_2_28_x86-64",
    ],
)
def test_junk_is_no_tag(junk: str) -> None:
    assert parse_platform_tag(junk) is None


def test_legacy_aliases_both_ways() -> None:
    assert legacy_manylinux((2, 17)) == "manylinux2014"
    assert legacy_manylinux((2, 12)) == "manylinux2010"
    assert legacy_manylinux((2, 5)) == "manylinux1"
    assert legacy_manylinux((2, 28)) is None
    for name, glibc in LEGACY_MANYLINUX.items():
        parsed = parse_platform_tag(f"{name}_x86_64")
        assert parsed is not None and parsed.version == glibc and parsed.legacy == name


def test_the_readers_agree_on_legacy_and_pep600_tags() -> None:
    # deps expands a legacy alias as its PEP 600 name
    assert expand_platform("manylinux2014_x86_64") == expand_platform("manylinux_2_17_x86_64")
    assert expand_platform("manylinux_2_17_x86_64")[-3:] == [
        "manylinux2014_x86_64",
        "manylinux2010_x86_64",
        "manylinux1_x86_64",
    ]
    assert expand_platform("musllinux_1_2_x86_64") == ["musllinux_1_2_x86_64"]
    assert expand_platform("junk_2_x") == ["junk_2_x"]
    # pip download's platforms: legacy aliases beside their glibc, none below 2_17 on aarch64
    found = platforms("manylinux_2_17_aarch64")
    assert found[0] == "manylinux_2_17_aarch64" and "manylinux2014_aarch64" in found
    assert "manylinux2010_aarch64" not in found and found[-1] == "manylinux_2_5_aarch64"
    assert platforms("musllinux_1_2_x86_64") == [
        "musllinux_1_2_x86_64",
        "musllinux_1_1_x86_64",
        "musllinux_1_0_x86_64",
    ]
    assert platforms("win_amd64") == ["win_amd64"]
    assert platforms("macosx_11_0_arm64")[0] == "macosx_11_0_arm64"
    # validate: a manylinux_X_Y between policies gets X.Y as its glibc ceiling
    policy = policy_for_tag("manylinux_2_30_x86_64")
    assert policy is not None and str(policy.glibc) == "2.30" and policy.arch == "x86_64"
    assert policy_for_tag("manylinux_2_x_x86_64") is None
    mac = macos_tag("macosx_10_13_universal2")
    assert mac is not None and mac.version == (10, 13) and mac.arches == {"x86_64", "aarch64"}
    assert macos_tag("macosx_11_0_sparc") is None and macos_tag("win_amd64") is None
