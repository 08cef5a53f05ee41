"""The checks of one native archive against its cell (RF-V060–RF-V063), and the wheel checks
that apply to its members unchanged."""

from __future__ import annotations

import dataclasses
import posixpath
from concurrent.futures import Executor
from pathlib import Path

from relforge.manifest import Verdict
from relforge.matrix.cell import Cell
from relforge.validate.archive import (
    BUILD_VERSION,
    LAYOUT_DIRS,
    ArchiveFacts,
    gather_archive,
)
from relforge.validate.binaries import normal_arch
from relforge.validate.checkregistry import Expectation, check_artifact, register

# The wheel checks that look only at members, ELF files and size (the others read .dist-info).
MEMBER_CHECKS = frozenset(
    {"RF-V032", "RF-V033", "RF-V040", "RF-V041", "RF-V042", "RF-V043", "RF-V044", "RF-V045",
     "RF-V046", "RF-V048", "RF-V050", "RF-V070", "RF-V071", "RF-V072"}
)  # fmt: skip

READABLE = register("RF-V060", "archive-readable", "cell",
                    "A native archive is a readable zip file whose every member inflates to the "
                    "size and CRC-32 its entry declares.")  # fmt: skip
LAYOUT = register("RF-V061", "archive-layout", "cell",
                  "Every name in the archive lies below one top directory (libtorch/) that "
                  "holds include/ and lib/; in a Windows or macOS archive no two names differ "
                  "only in case (they would overwrite each other when unpacked).")  # fmt: skip
BUILD_VERSION_CHECK = register("RF-V062", "build-version", "cell",
                               "The top directory's build-version file holds exactly the cell's "
                               "version (surrounding whitespace aside).")  # fmt: skip
SEARCH_PATHS = register("RF-V063", "archive-search-paths", "cell",
                        "Every $ORIGIN RPATH/RUNPATH entry of an ELF member stays inside the "
                        "archive's top directory (outside it lies whatever is beside the "
                        "unpacked archive).")  # fmt: skip

BINARIES = register("RF-V064", "archive-binaries", "cell",
                    "Every binary member is of the cell's operating system and architecture: ELF "
                    "on Linux (machines: RF-V044), PE on Windows, Mach-O on macOS (a universal "
                    "file must hold the cell's architecture).")  # fmt: skip

_ORIGIN = ("$ORIGIN", "${ORIGIN}")
_FORMATS = {"linux": "ELF", "windows": "PE", "macos": "Mach-O"}


def validate_archive(path: Path, expect: Expectation, platform_tags: tuple[str, ...],
                     pool: Executor) -> list[Verdict]:  # fmt: skip
    """Every static check of one archive: its own, then the member checks wheels get."""
    facts = gather_archive(path, platform_tags, pool)
    return check_archive(facts, dataclasses.replace(expect, linked=True))


def check_archive(facts: ArchiveFacts, expect: Expectation) -> list[Verdict]:
    """The verdicts on gathered facts (`expect.cell` gives the version to hold it to)."""
    if facts.members.error is not None:
        return [
            READABLE.verdict("fail", facts.members.error),
            *(
                spec.verdict("skip", "the archive could not be read")
                for spec in (LAYOUT, BUILD_VERSION_CHECK, SEARCH_PATHS, BINARIES)
            ),
            *_member_checks(facts, expect),
        ]
    return [
        READABLE.verdict("fail", _listing(list(facts.damaged)))
        if facts.damaged
        else READABLE.verdict("pass", f"{len(facts.entries)} names, every member intact"),
        _layout(facts, expect.cell),
        _build_version(facts, expect.cell),
        _search_paths(facts),
        _binaries(facts, expect.cell),
        *_member_checks(facts, expect),
    ]


def _member_checks(facts: ArchiveFacts, expect: Expectation) -> list[Verdict]:
    """The wheel checks of members; their messages speak of the wheel, here it is the archive."""
    return [
        dataclasses.replace(
            v,
            message=v.message.replace(" the wheel", " the archive").replace(
                "platform wheel", "platform archive"
            ),
        )
        for v in check_artifact(facts.members, expect, only=MEMBER_CHECKS)
    ]


def _listing(found: list[str]) -> str:
    return "; ".join(found[:8]) + (f" (+{len(found) - 8} more)" if len(found) > 8 else "")


def _layout(facts: ArchiveFacts, cell: Cell | None) -> Verdict:
    if not facts.entries:
        return LAYOUT.verdict("fail", "the archive is empty")
    top = facts.top
    if top is None:
        loose = [n for n in facts.entries if "/" not in n]
        shown = [f"{t or '/'}/" for t in facts.tops]
        why = (
            f"files at the top level: {_listing(loose)}"
            if loose
            else f"{len(shown)} top directories: {_listing(shown)}"
        )
        return LAYOUT.verdict("fail", f"expected one top directory; {why}")
    files = [n for n in facts.entries if not n.endswith("/")]
    counts = {d: sum(1 for n in files if n.startswith(f"{top}/{d}/")) for d in LAYOUT_DIRS}
    missing = [f"{top}/{d}/" for d, n in counts.items() if n == 0]
    if missing:
        return LAYOUT.verdict("fail", f"no files in {', '.join(missing)}")
    if cell is not None and cell.os in ("windows", "macos"):
        seen: dict[str, str] = {}
        clashes = []
        for name in files:
            first = seen.setdefault(name.casefold(), name)
            if first != name:
                clashes.append(f"{name} and {first}")
        if clashes:
            return LAYOUT.verdict(
                "fail",
                f"names that differ only in case, one file on {cell.os}: " + _listing(clashes),
            )
    return LAYOUT.verdict(
        "pass", f"{top}/ with " + ", ".join(f"{d}/ ({n} files)" for d, n in counts.items())
    )


def _build_version(facts: ArchiveFacts, cell: Cell | None) -> Verdict:
    if facts.build_version is None:
        return BUILD_VERSION_CHECK.verdict("fail", facts.build_version_problem or "no version")
    name = f"{facts.top}/{BUILD_VERSION}"
    if cell is None or cell.version is None:
        return BUILD_VERSION_CHECK.verdict("skip", f"{name} says {facts.build_version!r}")
    if facts.build_version != cell.version:
        return BUILD_VERSION_CHECK.verdict(
            "fail",
            f"{name} says {facts.build_version!r}, the cell's version is {cell.version!r}",
        )
    return BUILD_VERSION_CHECK.verdict("pass", f"{name}: {cell.version}")


def _search_paths(facts: ArchiveFacts) -> Verdict:
    elves = facts.members.elves
    if not elves:
        return SEARCH_PATHS.verdict("skip", "no ELF files")
    top = facts.top
    if top is None:
        return SEARCH_PATHS.verdict("skip", "no single top directory (RF-V061)")
    found = []
    for elf in elves:
        if elf.info is None:
            continue
        for kind, entries in (("RPATH", elf.info.rpath), ("RUNPATH", elf.info.runpath)):
            for entry in entries:
                token = next((t for t in _ORIGIN if entry.startswith(t)), None)
                if token is None:
                    continue  # not $ORIGIN-relative: RF-V043's failure
                rest = entry[len(token) :].lstrip("/")
                where = posixpath.normpath(posixpath.join(posixpath.dirname(elf.path), rest))
                if not (where == top or where.startswith(f"{top}/")):
                    found.append(f"{elf.path} {kind} {entry!r} reaches {where}/")
    if found:
        return SEARCH_PATHS.verdict("fail", f"outside {top}/: " + _listing(found))
    return SEARCH_PATHS.verdict("pass", f"inside {top}/")


def _binaries(facts: ArchiveFacts, cell: Cell | None) -> Verdict:
    if not facts.binaries:
        return BINARIES.verdict("skip", "no ELF, PE or Mach-O files")
    if cell is None:
        return BINARIES.verdict("skip", "no cell to compare with")
    want = _FORMATS.get(cell.os)
    arch = normal_arch(cell.arch)
    found = []
    for binary in facts.binaries:
        if want is not None and binary.format != want:
            found.append(f"{binary.path} is {binary.format}, the cell builds for {cell.os}")
        elif binary.format != "ELF" and arch not in binary.arches:
            found.append(f"{binary.path} is for {', '.join(binary.arches)}, the cell for {arch}")
    if found:
        return BINARIES.verdict("fail", _listing(found))
    formats = sorted({b.format for b in facts.binaries})
    return BINARIES.verdict(
        "pass", f"{len(facts.binaries)} {'/'.join(formats)} files for {cell.os} {arch}"
    )
