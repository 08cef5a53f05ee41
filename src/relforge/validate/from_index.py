"""Dependency wheels found in a PEP 503 index (`wheel inspect --index URL`): for each
Requires-Dist distribution that may ship a library the wheel needs and does not bundle, the
newest file the requirement admits and the wheel's platform can install.  "May ship": the
catalogue (resources/library_providers.yaml) names it; when a needed library is in no catalogue
entry, every requirement may."""

from __future__ import annotations

from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from relforge.providedlibs import applies, linux_environment, providers_of
from relforge.validate.facts import WheelFacts
from relforge.validate.libraries import provides, resolve
from relforge.validate.tagpolicy import tag_arch


def _installable(tags: frozenset[object], arch: str | None, python_tag: str | None) -> bool:
    for tag in tags:
        platform = getattr(tag, "platform", "")
        interpreter = getattr(tag, "interpreter", "")
        if platform != "any" and arch is not None and tag_arch(platform) != arch:
            continue
        if interpreter.startswith("py") or interpreter == python_tag:
            return True
    return False


def dependencies_from_index(index_url: str, facts: WheelFacts, into: Path) -> list[Path]:
    """Download the dependency wheels the index offers for the wheel's unresolved libraries."""
    from relforge.validate.fetch import fetch_from_index, project_files

    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), None)
    environment = linux_environment(arch or "x86_64", facts.python_tag)
    needed = {n.library for n in resolve(facts) if n.status not in ("bundled", "allowed", "driver")}
    unknown = any(not providers_of(lib) for lib in needed)
    paths: list[Path] = []
    for requirement in facts.requires_dist:
        name = canonicalize_name(requirement.name)
        if not needed or not applies(requirement, environment):
            continue
        if not unknown and not any(provides(p, name) for lib in needed for p in providers_of(lib)):
            continue
        best: tuple[Version, str] | None = None
        for file_name in project_files(index_url, name):
            try:
                _, version, _, tags = parse_wheel_filename(file_name)
            except InvalidWheelFilename:
                continue
            if not requirement.specifier.contains(version, prereleases=True):
                continue
            if not _installable(frozenset(tags), arch, facts.python_tag):
                continue
            if best is None or version > best[0]:
                best = (version, file_name)
        if best is not None:
            paths += [a.path for a in fetch_from_index(index_url, name, {best[1]}, into)]
    return paths
