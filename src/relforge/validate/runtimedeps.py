"""RF-R001's account of a wheel's dependencies: where pip takes them from, which of the wheel's
requirements the fresh environment still lacks afterwards (left out: no source was given, or
the source did not have them), and the note a later check's ModuleNotFoundError gets when the
module it missed belongs to one of those.

What was left out is read from the environment itself (its Python's markers and the
distributions installed in it), not from how pip was asked: a passing RF-R001 never hides a
missing dependency behind a failing smoke test."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.errors import RelforgeError
from relforge.wheelformat import metadata_headers

FIX = (
    "pass `--runtime-index URL` (an index that has them, such as https://pypi.org/simple/) "
    "or mirror them into the channel with `relforge deps mirror`"
)

# What packaging's markers read, from the environment's own Python (PEP 508's definitions).
PROBE = """\
import json, os, platform, sys
from importlib import metadata
impl = sys.implementation
iver = "{0.major}.{0.minor}.{0.micro}".format(impl.version)
if impl.version.releaselevel != "final":
    iver += impl.version.releaselevel[0] + str(impl.version.serial)
env = {
    "implementation_name": impl.name,
    "implementation_version": iver,
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
dists = {}
for d in metadata.distributions():
    name = d.metadata["Name"]
    if name:
        dists[name] = d.version
print(json.dumps({"env": env, "dists": dists}))
"""
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class Sources:
    """pip's options for the wheel's dependencies; how to say where they come from; why the
    wheel's requirements are not installed at all ("" when they are)."""

    options: list[str]
    how: str
    none_because: str = ""


def install_sources(
    wheel: Path,
    index: str | None,
    source: str,
    axis_folders: Sequence[Path],
    no_axis_wheels: str = "",
) -> Sources:
    """Where the wheel's dependencies come from: the index given (with the dependency axes'
    wheels), else the axes' wheels alone, else nowhere.  The wheel itself is always its file:
    a requirement by path, which no index can replace."""
    links = [a for folder in axis_folders for a in ("--find-links", str(folder))]
    axes = ", with its dependency axes' wheels" if links else ""
    if index:
        return Sources(
            ["--index-url", index, *links], f"(dependencies from {source or index}{axes})"
        )
    if links:  # the dependency the wheel was built against, from the build
        return Sources(
            ["--no-index", *links], "(dependencies from its dependency axes' wheels only)"
        )
    if not declared_requirements(wheel):
        return Sources(["--no-index"], "(it declares no dependencies)")
    why = "no --runtime-index and no mirrored closure in the channel"
    if no_axis_wheels:
        why += f"; {no_axis_wheels}"
    return Sources(["--no-index", "--no-deps"], "", none_because=why)


def declared_requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist lines that apply without extras."""
    try:
        headers = metadata_headers(wheel)
    except RelforgeError:
        return []  # the static checks report a wheel without readable metadata
    out = []
    for line in headers.get_all("Requires-Dist") or []:
        try:
            marker = Requirement(line).marker
        except InvalidRequirement:
            continue  # RF-V checks report it
        if marker is None or "extra" not in str(marker):
            out.append(line)
    return out


def left_out(requirements: Sequence[str], probe_output: str) -> list[str]:
    """The requirements (Requires-Dist lines) that apply to the environment the PROBE ran in
    and that no distribution installed there satisfies.  An unreadable probe leaves out all."""
    try:
        probe = json.loads(probe_output.strip().splitlines()[-1])
        env: dict[str, str] = dict(probe["env"])
        dists = {canonicalize_name(k): str(v) for k, v in dict(probe["dists"]).items()}
    except (ValueError, IndexError, KeyError, TypeError):
        return list(requirements)
    out = []
    for line in requirements:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
            continue
        have = dists.get(canonicalize_name(req.name))
        if have is None or not _satisfies(req, have):
            out.append(line)
    return out


def _satisfies(req: Requirement, version: str) -> bool:
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True  # installed under that name; pip accepted it


def left_out_message(installed: str, without: str) -> str:
    """RF-R001's warning: what was installed, what was left out and why, and the fix."""
    return f"{installed} without {without}: a check that imports them fails; {FIX}"


def explain_missing(message: str, missing: Sequence[str], own_module: str) -> str:
    """`message` (a check's failure), with a note when it is a ModuleNotFoundError for a module
    of a dependency RF-R001 left out."""
    found = _NO_MODULE.search(message)
    if not found or not missing:
        return message
    top = found.group(1).split(".")[0]
    if top == own_module:
        return message  # the project's own module: not a dependency's
    owner = [r for r in missing if _module_guess(Requirement(r).name) == top.lower()]
    if owner:
        return f"{message} — {top} comes from {owner[0]}, which RF-R001 left out (the cause; {FIX})"
    return (
        f"{message} — RF-R001 left out {', '.join(missing)}; {top} may belong to one of them "
        "(see RF-R001)"
    )


def _module_guess(name: str) -> str:
    return canonicalize_name(name).replace("-", "_")


def reasons(failures: Mapping[str, str]) -> str:
    """`req: pip's last line` for each requirement pip could not install."""
    return "; ".join(f"{req}: {why}" for req, why in failures.items())
