"""C++ string-ABI markers in mangled names, and auditwheel's policy data."""

from __future__ import annotations

import pytest

from relforge.validate.cxxabi import abi_markers, in_namespaces, owner_namespace
from relforge.validate.tagpolicy import (
    highest_versions,
    policy_for_tag,
    strictest_policy,
    violations,
)


@pytest.mark.parametrize(
    ("name", "cxx11", "old"),
    [
        ("_ZN4demo7measureERKSs", False, True),
        ("_ZN4demo7measureERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE", True, False),
        ("_ZN5torch10SsomethingEv", False, False),  # "Ss" inside an identifier is no hint
        ("_ZN3foo3barESt4listIiSaIiEE", False, True),
        ("_ZN3foo3barENSt7__cxx114listIiSaIiEEE", True, False),
        ("_ZN5torch3strB5cxx11Ev", True, False),
        ("_ZN3c106detail4listILi5EEEv", False, False),  # a user type named list, not std::list
        ("PyInit__core", False, False),
    ],
)
def test_abi_markers(name: str, cxx11: bool, old: bool) -> None:
    assert abi_markers(name) == (cxx11, old)


def test_owner_namespace() -> None:
    assert owner_namespace("_ZN5torch3fooEv") == "torch"
    assert owner_namespace("_ZNK3c106Device3strB5cxx11Ev") == "c10"
    assert owner_namespace("_ZTVN5torch3FooE") == "torch"
    assert (
        owner_namespace("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4swapERS4_") == "std"
    )
    assert owner_namespace("_Z3fooRKSs") == ""
    assert in_namespaces("_ZN5torch3fooEv", ["torch", "c10"])
    assert not in_namespaces("_ZN2at3fooEv", ["torch"])
    assert in_namespaces("_ZN2at3fooEv", [])


def test_policies_from_auditwheel() -> None:
    p228 = policy_for_tag("manylinux_2_28_x86_64")
    assert p228 is not None and p228.name == "manylinux_2_28" and p228.arch == "x86_64"
    assert "libc.so.6" in p228.libraries
    assert p228.allows("GLIBC_2.28") and not p228.allows("GLIBC_2.34")
    assert not p228.allows("GLIBC_PRIVATE")
    legacy = policy_for_tag("manylinux2014_aarch64")
    assert legacy is not None and legacy.name == "manylinux_2_17" and legacy.arch == "aarch64"
    between = policy_for_tag(
        "manylinux_2_29_x86_64"
    )  # no policy of its own: 2_28's data, 2.29 ceiling
    assert between is not None and between.allows("GLIBC_2.29") and not between.allows("GLIBC_2.30")
    assert policy_for_tag("win_amd64") is None and policy_for_tag("linux_x86_64") is None
    needs = {"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.34"), "ld-linux-x86-64.so.2": ("GLIBC_2.40",)}
    assert violations(p228, needs) == ["libc.so.6: GLIBC_2.34"]
    strictest = strictest_policy("x86_64", [needs])
    assert strictest is not None and strictest.name == "manylinux_2_34"
    assert highest_versions([needs, {"libstdc++.so.6": ("GLIBCXX_3.4.9", "GLIBCXX_3.4.21")}]) == {
        "GLIBC": "2.34",
        "GLIBCXX": "3.4.21",
    }
