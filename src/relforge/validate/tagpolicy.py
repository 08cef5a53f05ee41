"""What a platform tag allows: symbol-version ceilings and the system-library allow-list.

The data is auditwheel's own policy JSON (manylinux and musllinux), loaded from the installed
`auditwheel` package; which distribution ships which library is relforge.providedlibs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packaging.version import InvalidVersion, Version

from relforge.wheelplatform import ParsedPlatform, parse_platform_tag

LOADER_PREFIXES = ("ld-linux", "ld64.so", "ld-musl")  # the dynamic loader, as auditwheel skips


@dataclass(frozen=True)
class Policy:
    """One auditwheel policy for one architecture."""

    name: str
    arch: str
    priority: int
    symbol_versions: Mapping[str, frozenset[str]]
    libraries: frozenset[str]
    glibc: Version | None = None

    def allows(self, version_name: str) -> bool:
        """Whether a needed version such as GLIBC_2.28 is within this policy."""
        namespace, _, version = version_name.partition("_")
        allowed = self.symbol_versions.get(namespace)
        if allowed is None or version in allowed:
            return True
        if namespace == "GLIBC" and self.glibc is not None:
            try:
                return Version(version) <= self.glibc
            except InvalidVersion:
                return False
        return False


@functools.cache
def _policy_data(family: str) -> tuple[dict[str, Any], ...]:
    text = (
        resources.files("auditwheel")
        .joinpath("policy")
        .joinpath(f"{family}-policy.json")
        .read_text(encoding="utf-8")
    )
    return tuple(json.loads(text))


def _policy(raw: Mapping[str, Any], arch: str, glibc: Version | None = None) -> Policy:
    versions = raw["symbol_versions"].get(arch, {})
    name = raw["name"]
    if glibc is None:
        parsed = _pep600(f"{name}_{arch}")
        if parsed is not None and parsed.version is not None:
            glibc = Version("{}.{}".format(*parsed.version))
    return Policy(
        name=name,
        arch=arch,
        priority=int(raw["priority"]),
        symbol_versions={k: frozenset(v) for k, v in versions.items()},
        libraries=frozenset(raw["lib_whitelist"]),
        glibc=glibc,
    )


def _pep600(platform_tag: str) -> ParsedPlatform | None:
    """A `manylinux_X_Y_arch` tag, parsed (None: any other, a legacy alias too)."""
    parsed = parse_platform_tag(platform_tag)
    if parsed is None or parsed.family != "manylinux" or parsed.legacy is not None:
        return None
    return parsed


def policies(arch: str, family: str = "manylinux") -> list[Policy]:
    """The policies of a family for an architecture, strictest (oldest) first."""
    found = [
        _policy(raw, arch)
        for raw in _policy_data(family)
        if raw["name"] != "linux" and arch in raw["symbol_versions"]
    ]
    return sorted(found, key=lambda p: -p.priority)


def policy_for_tag(platform_tag: str) -> Policy | None:
    """The policy of one platform tag (manylinux_2_28_x86_64, manylinux2014_aarch64,
    musllinux_1_2_x86_64); None for tags auditwheel has no policy for (linux_x86_64, win_amd64).
    A manylinux_X_Y tag between two policies gets the older one's data and a GLIBC ceiling of X.Y.
    """
    for family in ("manylinux", "musllinux"):
        for raw in _policy_data(family):
            for name in (raw["name"], *raw.get("aliases", ())):
                if name != "linux" and platform_tag.startswith(f"{name}_"):
                    arch = platform_tag[len(name) + 1 :]
                    if arch in raw["symbol_versions"]:
                        return _policy(raw, arch)
    parsed = _pep600(platform_tag)
    if parsed is None or parsed.version is None:
        return None
    major, minor = parsed.version
    glibc = Version(f"{major}.{minor}")
    older = [p for p in policies(parsed.arch) if p.glibc is not None and p.glibc <= glibc]
    if not older:
        return None
    base = older[-1]
    return Policy(
        name=f"manylinux_{major}_{minor}",
        arch=base.arch,
        priority=base.priority,
        symbol_versions=base.symbol_versions,
        libraries=base.libraries,
        glibc=glibc,
    )


def tag_arch(platform_tag: str) -> str | None:
    """The architecture a Linux platform tag names (x86_64, aarch64, …)."""
    policy = policy_for_tag(platform_tag)
    if policy is not None:
        return policy.arch
    if platform_tag.startswith("linux_"):
        return platform_tag[len("linux_") :]
    return None


def violations(policy: Policy, needs: Mapping[str, Sequence[str]]) -> list[str]:
    """`library: VERSION` needs (e.g. `libc.so.6: GLIBC_2.34`) outside the policy."""
    out = []
    for library, names in needs.items():
        if library.startswith(LOADER_PREFIXES):
            continue
        out += [f"{library}: {name}" for name in names if not policy.allows(name)]
    return out


def strictest_policy(arch: str, needs: Iterable[Mapping[str, Sequence[str]]]) -> Policy | None:
    """The oldest manylinux policy whose symbol versions admit every need (None: none does)."""
    all_needs = list(needs)
    for policy in policies(arch):
        if not any(violations(policy, n) for n in all_needs):
            return policy
    return None


def highest_versions(needs: Iterable[Mapping[str, Sequence[str]]]) -> dict[str, str]:
    """Highest needed version per namespace (GLIBC → 2.28, GLIBCXX → 3.4.22, …)."""
    best: dict[str, tuple[Version, str]] = {}
    for per_library in needs:
        for library, names in per_library.items():
            if library.startswith(LOADER_PREFIXES):
                continue
            for name in names:
                namespace, _, text = name.partition("_")
                if namespace not in {"GLIBC", "GLIBCXX", "CXXABI", "GCC"}:
                    continue
                try:
                    version = Version(text)
                except InvalidVersion:
                    continue
                if namespace not in best or version > best[namespace][0]:
                    best[namespace] = (version, text)
    return {k: v[1] for k, v in sorted(best.items())}
