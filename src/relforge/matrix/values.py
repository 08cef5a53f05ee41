"""Matrix values that are more than strings: Python versions, names, wheel platform tags.

Versions, specifiers, markers and requirements are always parsed by `packaging`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")  # platform, variant and rule-suffix names


@functools.total_ordering
@dataclass(frozen=True)
class PythonVersion:
    """A CPython feature version, optionally free-threaded: `3.13`, `3.13t`."""

    version: Version
    free_threaded: bool = False

    @classmethod
    def parse(cls, text: str) -> PythonVersion:
        raw = text.strip()
        threaded = raw.endswith("t")
        core = raw[:-1] if threaded else raw
        try:
            version = Version(core)
        except InvalidVersion:
            raise ValueError(f"{text!r} is not a Python version like 3.12 or 3.13t") from None
        if (
            len(version.release) != 2
            or version.major != 3
            or version.is_prerelease
            or version.is_postrelease
            or version.local
            or version.epoch
            or str(version) != core
        ):
            raise ValueError(f"{text!r} is not a Python feature version like 3.12 or 3.13t")
        if threaded and version < Version("3.13"):
            raise ValueError(f"{text!r}: free-threaded builds exist from Python 3.13 on")
        return cls(version, threaded)

    def __str__(self) -> str:
        return f"{self.version}{'t' if self.free_threaded else ''}"

    @property
    def python_tag(self) -> str:
        return f"cp{self.version.major}{self.version.minor}"

    @property
    def abi_tag(self) -> str:
        return f"{self.python_tag}{'t' if self.free_threaded else ''}"

    def _key(self) -> tuple[Version, bool]:
        return (self.version, self.free_threaded)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PythonVersion):
            return NotImplemented
        return self._key() < other._key()


class LimitedApi(PythonVersion):
    """A limited-API floor (`abi3: "3.9"`): the oldest CPython an abi3 wheel (`cp39-abi3`)
    serves.  Never free-threaded: abi3 wheels do not load on free-threaded builds."""

    @classmethod
    def parse(cls, text: str) -> LimitedApi:
        python = PythonVersion.parse(text)
        if python.free_threaded:
            raise ValueError(
                f"{text!r}: abi3 wheels do not load on free-threaded Python; write the floor "
                "like 3.9 (free-threaded Pythons get wheels of their own)"
            )
        if python.version < Version("3.2"):
            raise ValueError(f"{text!r}: the stable ABI starts at Python 3.2 (PEP 384)")
        return cls(python.version)


def check_name(text: str, what: str) -> str:
    """Names of platforms, variants and suffixes: lowercase letters, digits, `.`, `_`, `-`."""
    if not _NAME.match(text):
        raise ValueError(
            f"{what} {text!r} must be lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return text


def local_version(variant: str) -> str:
    """The PEP 440 local version label of a variant (`cpu-cxx11-abi` → `cpu.cxx11.abi`)."""
    try:
        local = Version(f"0+{variant}").local
    except InvalidVersion:
        raise ValueError(
            f"variant name {variant!r} is not a valid PEP 440 local version label"
        ) from None
    assert local is not None
    return local


@functools.lru_cache(maxsize=4096)
def parse_requirement(text: str) -> Requirement:
    """Parse a PEP 508 requirement (cached: the same pins repeat across many cells)."""
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"{text!r} is not a PEP 508 requirement: {exc}") from None


def requirement_name(text: str) -> str:
    return canonicalize_name(parse_requirement(text).name)


def pinned_version(text: str) -> Version | None:
    """The version a requirement pins with `==`, if it pins exactly one."""
    specs = list(parse_requirement(text).specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        try:
            return Version(specs[0].version)
        except InvalidVersion:
            return None
    return None


_ARCH_ALIASES = {
    "x86_64": ("x86_64", "amd64"),
    "aarch64": ("aarch64", "arm64"),
    "arm64": ("aarch64", "arm64"),
}


def platform_tag_problem(tag: str, os: str, arch: str) -> str | None:
    """Why a wheel platform tag cannot belong to this OS and architecture (None if it can)."""
    arches = _ARCH_ALIASES.get(arch, (arch,))
    for part in tag.split("."):
        if os == "linux":
            ok = part.startswith(("manylinux", "musllinux", "linux_")) and any(
                part.endswith(f"_{a}") for a in arches if a not in ("amd64", "arm64")
            )
        elif os == "windows":
            ok = part in {f"win_{a}" for a in arches} or (part == "win32" and arch == "x86")
        elif os == "macos":
            ok = part.startswith("macosx_") and (
                any(part.endswith(f"_{a}") for a in arches) or part.endswith("_universal2")
            )
        else:
            ok = True
        if not ok:
            return f"platform tag {part!r} is not a {os} {arch} tag"
    return None


def check_platform_tag(tag: str) -> str:
    """A syntactically valid wheel platform tag (as `packaging` reads wheel file names)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        parse_wheel_filename(f"x-1-py3-none-{tag}.whl")
    except InvalidWheelFilename:
        raise ValueError(f"{tag!r} is not a wheel platform tag") from None
    if not tag or tag != tag.lower() or "-" in tag or " " in tag:
        raise ValueError(f"{tag!r} is not a wheel platform tag")
    return tag


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be the base the channel folders hang off (`<url>/whl/cpu`), or None.
    `matrix docs`, `relforge site` and the matrix's own `project.download_url` share it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "file") or any(
        c.isspace() or not c.isprintable() for c in url
    ):
        return "is not an http(s):// or file:// URL"
    if "?" in url or "#" in url:
        return "has a query or fragment, so no folder can be appended to its path"
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            return "is not an absolute file:// URL (file:///path/to/store)"
    elif not parts.hostname:
        return "names no host"
    return None
