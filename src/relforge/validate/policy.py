"""What a platform tag allows: symbol-version ceilings and the system-library allow-list.

The data is auditwheel's own policy JSON (manylinux and musllinux), loaded from the installed
`auditwheel` package; the library → distribution map is ours (resources/library_providers.yaml).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_(.+)\Z")  # PEP 600 tag grammar
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
    if glibc is None and name.startswith("manylinux_"):
        match = _MANYLINUX.match(f"{name}_{arch}")
        if match:
            glibc = Version(f"{match.group(1)}.{match.group(2)}")
    return Policy(
        name=name,
        arch=arch,
        priority=int(raw["priority"]),
        symbol_versions={k: frozenset(v) for k, v in versions.items()},
        libraries=frozenset(raw["lib_whitelist"]),
        glibc=glibc,
    )


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
    match = _MANYLINUX.match(platform_tag)
    if match is None:
        return None
    glibc = Version(f"{match.group(1)}.{match.group(2)}")
    older = [p for p in policies(match.group(3)) if p.glibc is not None and p.glibc <= glibc]
    if not older:
        return None
    base = older[-1]
    return Policy(
        name=f"manylinux_{match.group(1)}_{match.group(2)}",
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


@functools.cache
def library_providers() -> dict[str, tuple[str, ...]]:
    """soname glob → distributions that ship the library (resources/library_providers.yaml)."""
    import yaml  # only wheels needing a library outside the allow-list get here

    text = (
        resources.files("relforge.resources")
        .joinpath("library_providers.yaml")
        .read_text(encoding="utf-8")
    )
    return {str(k): tuple(str(p) for p in v) for k, v in yaml.safe_load(text).items()}


def linux_environment(arch: str, python_tag: str | None) -> dict[str, str]:
    """A marker environment for a Linux machine of this arch running the wheel's Python."""
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    env.update(
        os_name="posix",
        sys_platform="linux",
        platform_system="Linux",
        platform_machine=arch,
        implementation_name="cpython",
        platform_python_implementation="CPython",
    )
    if python_tag and python_tag.startswith("cp") and python_tag[2:].isdigit():
        digits = python_tag[2:]
        version = f"{digits[0]}.{digits[1:]}"
        env.update(python_version=version, python_full_version=f"{version}.0")
    return env


def providers_of(library: str) -> list[str]:
    """Distributions that ship `library`; `@driver` for the GPU driver's own libraries."""
    return [
        p
        for pattern, ps in library_providers().items()
        if fnmatch.fnmatch(library, pattern)
        for p in ps
    ]


def applies(requirement: Requirement, environment: Mapping[str, str]) -> bool:
    """Whether the requirement's marker is true here; a marker that cannot be evaluated
    (`python_version ~= "abc"`) is not."""
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**environment, "extra": ""})
    except ValueError:  # UndefinedComparison, UndefinedEnvironmentName
        return False


def declared_by(
    library: str, requirements: Sequence[Requirement], environment: Mapping[str, str]
) -> Requirement | None:
    """The requirement (true on this platform) whose distribution ships `library`, if any."""
    providers = [p for p in providers_of(library) if not p.startswith("@")]
    if not providers:
        return None
    env = {**environment, "extra": ""}
    for requirement in requirements:
        if not applies(requirement, env):
            continue
        for provider in providers:
            name, _, extra = provider.partition("[")
            if canonicalize_name(requirement.name) != canonicalize_name(name):
                continue
            if not extra or extra.rstrip("]") in requirement.extras:
                return requirement
    return None
