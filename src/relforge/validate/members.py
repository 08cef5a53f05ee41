"""Checks of the zip members themselves: paths an installer could be tricked by, entries that
are not regular files, and shared objects that are not ELF (RF-V032, RF-V033, RF-V045)."""

from __future__ import annotations

import re

from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.facts import WheelFacts
from relforge.validate.tagpolicy import tag_arch

_DRIVE = re.compile(r"[A-Za-z]:")


def unsafe_path(name: str) -> str | None:
    """Why a member name would land outside the install directory, if it would."""
    if "\x00" in name:
        return "contains a NUL byte"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "climbs out with '..'"
    return None


def _listing(found: list[str]) -> str:
    return "; ".join(found[:8]) + (f" (+{len(found) - 8} more)" if len(found) > 8 else "")


@artifact("RF-V032", "member-paths",
          "No member path is absolute, climbs out with '..', or is listed twice in the "
          "zip.")  # fmt: skip
def _member_paths(facts: WheelFacts, expect: Expectation) -> Outcome:
    found = [f"{name!r} {why}" for name in facts.members if (why := unsafe_path(name))]
    found += [f"{name!r} is in the zip more than once" for name in facts.duplicates]
    if found:
        return "fail", _listing(found)
    return "pass", f"{len(facts.members)} member paths inside the wheel"


@artifact("RF-V033", "member-types",
          "Every member is a regular file: no symlink (its target is not checked by RECORD and "
          "may point anywhere, e.g. at the host's libc), device or fifo.")  # fmt: skip
def _member_types(facts: WheelFacts, expect: Expectation) -> Outcome:
    found = [
        f"{path} is a {kind}" + (f" to {target!r}" if target else "")
        for path, kind, target in facts.special_members
    ]
    if found:
        return "fail", _listing(found)
    return "pass", "only regular files"


@artifact("RF-V045", "shared-objects-are-elf",
          "In a Linux platform wheel every *.so / *.so.N member is an ELF file.")  # fmt: skip
def _shared_objects(facts: WheelFacts, expect: Expectation) -> Outcome:
    if not any(tag_arch(t) for t in facts.platform_tags):
        return "skip", "not a Linux platform wheel"
    if facts.fake_shared_objects:
        return "fail", _listing(
            [f"{p} is named like a shared object but is not ELF" for p in facts.fake_shared_objects]
        )
    return "pass", f"{len(facts.elves)} ELF files"
