"""Shared libraries a wheel may need without shipping them: the GPU driver's, and those a Python
distribution it requires ships (torch's libc10.so, nvidia-cudnn's libcudnn.so.9, …).

One catalogue, resources/library_providers.yaml (soname glob → distributions, `@driver` for the
driver), serves both sides of a build: `auditwheel repair` leaves out the libraries of the
distributions a cell requires (`excluded_libraries`, builders.postbuild), and validation accepts
a library when Requires-Dist names a distribution that ships it (`declared_by`, RF-V041).  So
what repair leaves out is exactly what the checks then accept.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping, Sequence
from importlib import resources

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DRIVER = "@driver"  # a library of the GPU driver: never in a wheel, never a dependency's


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


def providers_of(library: str) -> list[str]:
    """Distributions that ship `library`; `@driver` for the GPU driver's own libraries."""
    return [
        p
        for pattern, ps in library_providers().items()
        if fnmatch.fnmatch(library, pattern)
        for p in ps
    ]


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


def applies(requirement: Requirement, environment: Mapping[str, str]) -> bool:
    """Whether the requirement's marker is true here; a marker that cannot be evaluated
    (`python_version ~= "abc"`) is not."""
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**environment, "extra": ""})
    except ValueError:  # UndefinedComparison, UndefinedEnvironmentName
        return False


def names(provider: str, requirement: Requirement) -> bool:
    """Whether a catalogue entry (`dist`, or `dist[extra]`: only with that extra asked for) is
    what `requirement` installs."""
    name, _, extra = provider.partition("[")
    if canonicalize_name(requirement.name) != canonicalize_name(name):
        return False
    return not extra or extra.rstrip("]") in requirement.extras


def declared_by(
    library: str, requirements: Sequence[Requirement], environment: Mapping[str, str]
) -> Requirement | None:
    """The requirement (true on this platform) whose distribution ships `library`, if any."""
    providers = [p for p in providers_of(library) if not p.startswith("@")]
    if not providers:
        return None
    for requirement in requirements:
        if applies(requirement, environment) and any(names(p, requirement) for p in providers):
            return requirement
    return None


def excluded_libraries(
    requirements: Sequence[Requirement], environment: Mapping[str, str]
) -> tuple[str, ...]:
    """The library globs repair must not graft into a wheel with these requirements on the
    environment's OS (its `sys_platform`): the driver's libraries, and every library a required
    distribution (marker true) ships."""
    os = {"win32": "windows", "darwin": "macos"}.get(environment.get("sys_platform", ""), "linux")
    wanted = [r for r in requirements if applies(r, environment)]
    return tuple(
        pattern
        for pattern, providers in library_providers().items()
        if library_os(pattern) == os
        and any(p == DRIVER or any(names(p, r) for r in wanted) for p in providers)
    )


def library_os(pattern: str) -> str:
    """The OS a catalogue entry's library is for: windows (*.dll), macos (*.dylib), linux."""
    if pattern.endswith(".dll"):
        return "windows"
    return "macos" if pattern.endswith(".dylib") else "linux"


def platform_environment(os: str, arch: str, python_tag: str | None) -> dict[str, str]:
    """A marker environment for a machine of this OS (linux, macos, windows) and arch."""
    env = linux_environment(arch, python_tag)
    if os == "macos":
        env.update(sys_platform="darwin", platform_system="Darwin")
    elif os == "windows":
        env.update(os_name="nt", sys_platform="win32", platform_system="Windows")
    return env
