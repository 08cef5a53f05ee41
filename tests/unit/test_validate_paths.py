"""Pure helpers of the member and library checks: unsafe member names, where members land in
site-packages, $ORIGIN expansion, shared-object names."""

from __future__ import annotations

import pytest

from relforge.validate.libraries import _expand
from relforge.validate.members import unsafe_path
from relforge.validate.providers import site_path
from relforge.validate.wheelreader import is_shared_object_name


@pytest.mark.parametrize(
    "name, why",
    [
        ("pkg/mod.py", None),
        ("pkg/..data/x", None),  # `..data` is a name, not a parent reference
        ("pkg/../../etc/passwd", "climbs out with '..'"),
        ("..", "climbs out with '..'"),
        ("/abs/path", "is an absolute path"),
        ("\\\\server\\share\\x", "is an absolute path"),
        ("c:/x", "is an absolute path"),
        ("pkg\\..\\x", "climbs out with '..'"),
        ("pkg/a\x00b", "contains a NUL byte"),
    ],
)
def test_unsafe_paths(name: str, why: str | None) -> None:
    assert unsafe_path(name) == why


@pytest.mark.parametrize(
    "member, where",
    [
        ("torch/lib/libc10.so", "torch/lib/libc10.so"),
        ("x-1.0.data/platlib/x/_c.so", "x/_c.so"),
        ("x-1.0.data/purelib/x/a.py", "x/a.py"),
        ("x-1.0.data/scripts/tool", "<scripts>/tool"),
    ],
)
def test_site_path(member: str, where: str) -> None:
    assert site_path(member) == where


@pytest.mark.parametrize(
    "entry, origin, expanded",
    [
        ("$ORIGIN", "torch", "torch"),
        ("$ORIGIN/lib", "torch", "torch/lib"),
        ("${ORIGIN}/../torch/lib", "torchvision", "torch/lib"),
        ("$ORIGIN/../../nvidia/cu13/lib", "torch/lib", "nvidia/cu13/lib"),
        ("$ORIGIN", "", "."),
        ("/usr/lib", "torch", None),
        ("$LIB/x", "torch", None),
    ],
)
def test_origin_expansion(entry: str, origin: str, expanded: str | None) -> None:
    assert _expand(entry, origin) == expanded


@pytest.mark.parametrize(
    "name, shared",
    [
        ("a/libfoo.so", True),
        ("a/libfoo.so.1.2.3", True),
        ("a/_core.cpython-311-x86_64-linux-gnu.so", True),
        ("a/so.py", False),
        ("a/libfoo.so.txt", False),
        ("a/.so", False),
    ],
)
def test_shared_object_names(name: str, shared: bool) -> None:
    assert is_shared_object_name(name) is shared
