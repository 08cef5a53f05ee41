"""What the checks of a native archive (libtorch-style zip) look at, gathered in one pass.

An archive is one top directory (`libtorch/`) holding `include/`, `lib/` and a `build-version`
file whose text is the version it was built as.  Its members are read like a wheel's (the same
memory-mapped zip, bounded inflation, ELF reader) into a `WheelFacts` tagged with the platform
tag of the cell's platform, so the wheel checks of member paths, symbol versions, libraries,
C++ ABI, RPATHs, machines and size apply unchanged; archivechecks.py adds the archive's own.
"""

from __future__ import annotations

import posixpath
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from relforge.matrix.cell import Cell
from relforge.matrix.schema import Release
from relforge.validate.archivezip import ArchiveError, NativeArchive
from relforge.validate.binaries import HEAD, PE_HEAD_LIMIT, Binary, identify, pe_header_offset
from relforge.validate.facts import WheelFacts, read_elf_members, read_foreign_members
from relforge.validate.inflate import MemberError
from relforge.validate.wheelreader import NOT_ELF, is_shared_object_name

BUILD_VERSION = "build-version"
LAYOUT_DIRS = ("include", "lib")
BUILD_VERSION_LIMIT = 1024  # bytes; a version string is far shorter, a bigger file is not one


@dataclass(frozen=True, kw_only=True)
class ArchiveFacts:
    """One archive: its members as the wheel checks see them, its layout and build-version."""

    members: WheelFacts  # `error` set when the file is no readable zip
    entries: tuple[str, ...] = ()  # every name in the zip: files and directory entries
    damaged: tuple[str, ...] = ()  # members whose bytes are not the declared size and CRC-32
    binaries: tuple[Binary, ...] = ()  # ELF, PE and Mach-O members by their headers
    build_version: str | None = None  # the file's text (stripped); None when it has no good one
    build_version_problem: str | None = None

    @property
    def tops(self) -> tuple[str, ...]:
        """The distinct first components of the zip's names (one for a well-formed archive)."""
        return tuple(sorted({name.split("/", 1)[0] for name in self.entries}))

    @property
    def top(self) -> str | None:
        """The one top directory, when every name lies below it."""
        tops = self.tops
        if len(tops) != 1 or not all("/" in name for name in self.entries):
            return None
        return tops[0] or None


def archive_filename(cell: Cell, project: str) -> str:
    """`{project}-{platform}-{archive variant}-{config}-{version}.zip`: the name binds an
    archive in a folder of artifacts to its cell (a manifest binds it by cell id)."""
    assert cell.version is not None, "cells must be stamped for a channel"
    name = canonicalize_name(project)
    return (
        f"{name}-{cell.platform}-{cell.libtorch_variant}-{cell.libtorch_config}-{cell.version}.zip"
    )


def archive_platform_tags(release: Release, cell: Cell) -> tuple[str, ...]:
    """The platform tag(s) an archive of the cell is held to: its variant's on the platform,
    else the platform's (the tag a wheel of the same variant and platform gets)."""
    platform = release.platforms.get(cell.platform)
    variant = release.accelerators.get(cell.variant)
    on = variant.platforms.get(cell.platform) if variant is not None else None
    tag = (on.platform_tag if on is not None else None) or (
        platform.platform_tag if platform is not None else ""
    )
    return tuple(t for t in str(tag or "").split(".") if t)


def gather_archive(path: Path, platform_tags: tuple[str, ...], pool: Executor) -> ArchiveFacts:
    """Read one archive; its ELF members are read on `pool`, with their dynamic symbols."""
    # The wheel checks read the platform from the tags; the interpreter and ABI parts are moot.
    tags = tuple(f"py3-none-{tag}" for tag in platform_tags)
    size = path.stat().st_size if path.exists() else 0
    try:
        archive = NativeArchive(path)
    except ArchiveError as exc:
        return ArchiveFacts(members=WheelFacts(path=path, size=size, error=str(exc), tags=tags))
    with archive:
        # a duplicate name's earlier entries are RF-V032's; the last one is what unzip leaves
        integrity = [pool.submit(archive.intact, m) for m in archive.members.values()]
        elves = read_elf_members(archive, pool, symbols=True)
        machos, pes = read_foreign_members(archive, pool)
        elf_names = {e.path for e in elves}
        fake = tuple(
            m.name
            for m in archive.members.values()
            if m.file_type is None and is_shared_object_name(m.name) and m.name not in elf_names
        )
        entries = (*archive.members, *archive.directories)
        facts = WheelFacts(
            path=path,
            size=archive.size,
            tags=tags,
            members=entries,  # directory entries too: unzip creates them where they say
            elves=elves,
            duplicates=tuple(archive.duplicates),
            special_members=tuple(archive.special_members()),
            fake_shared_objects=fake,
            machos=machos,
            pes=pes,
        )
        found = ArchiveFacts(members=facts, entries=entries)
        text, problem = _build_version(archive, found.top)
        binaries = _binaries(archive)
        damaged = (
            *archive.overlapping(),
            *(p for p in (job.result() for job in integrity) if p is not None),
        )
    return ArchiveFacts(
        members=facts,
        entries=entries,
        damaged=damaged,
        binaries=binaries,
        build_version=text,
        build_version_problem=problem,
    )


def _binaries(archive: NativeArchive) -> tuple[Binary, ...]:
    """Every member that is an ELF, PE or Mach-O file (only its first bytes are inflated)."""
    found = []
    for member in archive.members.values():
        if member.size < 8 or member.file_type or member.name.endswith(NOT_ELF):
            continue
        head = archive.head(member, HEAD)
        offset = pe_header_offset(head)
        if offset is not None and HEAD - 8 < offset <= PE_HEAD_LIMIT:
            head = archive.head(member, offset + 8)
        binary = identify(member.name, head)
        if binary is not None:
            found.append(binary)
    return tuple(found)


def _build_version(archive: NativeArchive, top: str | None) -> tuple[str | None, str | None]:
    """The build-version file's text, or why there is none to compare."""
    if top is None:
        return None, "no single top directory to hold build-version"
    name = posixpath.join(top, BUILD_VERSION)
    member = archive.members.get(name)
    if member is None:
        return None, f"no {name}"
    if member.file_type is not None:
        return None, f"{name} is a {member.file_type}, not a file"
    if max(member.size, member.compressed_size) > BUILD_VERSION_LIMIT:
        return None, (
            f"{name} declares {member.size} bytes ({member.compressed_size} compressed); "
            f"a version file holds at most {BUILD_VERSION_LIMIT}"
        )
    data = b""
    try:
        for chunk in archive.chunks(member):
            data += chunk
            if len(data) > BUILD_VERSION_LIMIT:
                break
    except MemberError as exc:
        return None, f"{name}: {exc}"
    if len(data) != member.size:
        return None, f"{name} inflates to {len(data)} bytes, the zip says {member.size}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"{name} is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})"
    return text.strip(), None
