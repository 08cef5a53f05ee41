"""Dependency wheels at hand (`--with WHEEL`): where their files land and which libraries they ship.

A wheel's files are installed side by side with its dependencies' in one site-packages, so a
RUNPATH such as `$ORIGIN/../../torch/lib` of one wheel may reach a library of another.  Paths
here are relative to that site-packages directory.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from relforge.validate.facts import ElfMember, WheelFacts, gather
from relforge.wheelformat import WheelError


def site_path(member: str) -> str:
    """Where a member lands relative to site-packages (`<name>.data/platlib/x` → `x`)."""
    head, _, rest = member.partition("/")
    if head.endswith(".data"):
        scheme, _, inner = rest.partition("/")
        if scheme in ("platlib", "purelib"):
            return inner
        return f"<{scheme}>/{inner}"  # scripts, headers, data: not in site-packages
    return member


@dataclass(frozen=True, kw_only=True)
class DependencyWheel:
    """A dependency's wheel read like the wheel under test (no RECORD hashing)."""

    facts: WheelFacts
    source: str = "--with"  # how it came to hand: --with, or the index it was found in

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.facts.metadata_name or self.facts.name)

    @property
    def label(self) -> str:
        return f"{self.facts.metadata_name or self.facts.name} {self.facts.version}"

    @functools.cached_property
    def elves_by_site_path(self) -> dict[str, ElfMember]:
        return {site_path(e.path): e for e in self.facts.elves}

    @functools.cached_property
    def elves_by_file_name(self) -> dict[str, list[ElfMember]]:
        out: dict[str, list[ElfMember]] = {}
        for elf in self.facts.elves:
            out.setdefault(posixpath.basename(elf.path), []).append(elf)
        return out


def read_dependencies(
    paths: Sequence[Path],
    *,
    jobs: int = 2,
    libraries: frozenset[str] | None = None,
    source: str = "--with",
) -> tuple[DependencyWheel, ...]:
    """The `--with` wheels, read like the wheel under test; WheelError if one is unreadable.
    `libraries`: only the ELF files of these names and what they need (torch --with cuDNN's
    wheel reads libcudnn.so.9, not its 900 MB of engines)."""
    out = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for path in paths:
            facts = gather(path, pool, verify_digests=False, symbols=True, libraries=libraries)
            if facts.error is not None:
                raise WheelError(f"{source} {path.name}: {facts.error}")
            out.append(DependencyWheel(facts=facts, source=source))
    return tuple(out)
