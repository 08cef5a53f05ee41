"""Everything the static checks look at, gathered from one wheel in one pass over its zip.

ELF members and RECORD hashes are worked on by a shared thread pool: zlib and hashlib release
the GIL while they inflate and hash, so two cores are kept busy.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from relforge.validate.binaries import PE_HEAD_LIMIT, pe_header_offset
from relforge.validate.devicecode import DeviceCode
from relforge.validate.elf import ElfError, ElfInfo, read_elf, read_elf_device
from relforge.validate.inflate import ByteSource, MemberError, MemberTooLarge
from relforge.validate.macho import MachOError, MachOInfo, read_macho
from relforge.validate.pe import PEError, PEInfo, read_pe
from relforge.validate.wheelreader import (
    Member,
    WheelArchive,
    is_shared_object_name,
)
from relforge.wheelformat import RecordRow, WheelError

# Files a wheel may carry without a RECORD line (signatures of RECORD itself).
UNRECORDED = ("RECORD", "RECORD.jws", "RECORD.p7s")


@dataclass(frozen=True, kw_only=True)
class ElfMember:
    path: str
    size: int
    info: ElfInfo | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class MachOMember:
    path: str
    size: int
    info: MachOInfo | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class PEMember:
    path: str
    size: int
    info: PEInfo | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class WheelFacts:
    path: Path
    size: int
    error: str | None = None
    name: str = ""
    version: str = ""
    tags: tuple[str, ...] = ()
    wheel_tags: tuple[str, ...] = ()
    metadata_name: str | None = None
    metadata_version: str | None = None
    requires_dist: tuple[Requirement, ...] = ()
    metadata_errors: tuple[str, ...] = ()
    requires_python: SpecifierSet | None = None
    classifiers: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    record: tuple[RecordRow, ...] = ()
    digest_mismatches: tuple[str, ...] | None = None
    elves: tuple[ElfMember, ...] = field(default=())
    duplicates: tuple[str, ...] = ()  # member names the zip lists more than once
    special_members: tuple[tuple[str, str, str], ...] = ()  # (path, type, symlink target)
    fake_shared_objects: tuple[str, ...] = ()  # *.so members that are not ELF
    machos: tuple[MachOMember, ...] = field(default=())  # Mach-O files (macOS)
    pes: tuple[PEMember, ...] = field(default=())  # PE files (Windows DLLs, .pyd, .exe)

    @property
    def file_name(self) -> str:
        return self.path.name

    @property
    def python_tag(self) -> str | None:
        return next(iter(sorted({t.split("-")[0] for t in self.tags})), None)

    @property
    def platform_tags(self) -> tuple[str, ...]:
        return tuple(sorted({t.split("-")[2] for t in self.tags}))


def gather(
    path: Path,
    pool: Executor,
    *,
    verify_digests: bool,
    symbols: bool = False,
    libraries: frozenset[str] | None = None,
) -> WheelFacts:
    """Read one wheel: names, metadata, RECORD (hashes when asked), every ELF member (with its
    dynamic symbols when asked).  `libraries`: read only the ELF members of these file names
    and, transitively, of the libraries they need (a dependency wheel read for a consumer)."""
    size = path.stat().st_size if path.exists() else 0
    try:
        archive = WheelArchive(path)
    except WheelError as exc:
        return WheelFacts(path=path, size=size, error=str(exc))
    with archive:
        try:
            return _gather(archive, pool, verify_digests, symbols, libraries)
        except (WheelError, MemberError) as exc:
            return WheelFacts(path=path, size=size, error=str(exc))


def _gather(
    archive: WheelArchive,
    pool: Executor,
    verify_digests: bool,
    symbols: bool,
    libraries: frozenset[str] | None,
) -> WheelFacts:
    elf_members = archive.elf_members()
    foreign = read_foreign_members(archive, pool) if libraries is None else ((), ())
    if libraries is None:
        elf_jobs = [(m, pool.submit(_read_elf, archive, m, symbols, pool)) for m in elf_members]
    else:
        elf_jobs = _read_needed(archive, pool, elf_members, libraries, symbols)
    elf_names = {m.name for m in elf_members}
    fake = tuple(
        m.name
        for m in archive.members.values()
        if m.file_type is None and is_shared_object_name(m.name) and m.name not in elf_names
    )
    record = archive.record()
    digest_jobs: list[tuple[RecordRow, Member, Future[tuple[str, int]]]] = []
    if verify_digests:
        for row in record:
            member = archive.members.get(row.path)
            if member is not None and row.algorithm:
                digest_jobs.append((row, member, pool.submit(archive.digest, member)))
    metadata, metadata_problems = archive.metadata()
    wheel, wheel_problems = archive.wheel_file()
    requirements: list[Requirement] = []
    errors = [*metadata_problems, *wheel_problems]
    for text in _headers(metadata, "Requires-Dist"):
        try:
            requirements.append(Requirement(text))
        except InvalidRequirement as exc:
            errors.append(f"Requires-Dist {text!r}: {exc}")
    requires_python = None
    if metadata.get("Requires-Python") is not None:
        try:
            requires_python = SpecifierSet(str(metadata["Requires-Python"]))
        except InvalidSpecifier:
            errors.append(f"Requires-Python {metadata['Requires-Python']!r} is not a specifier")
    mismatches = None
    if verify_digests:
        found = []
        for row, _member, job in digest_jobs:
            try:
                digest, size = job.result()
            except MemberError as exc:
                found.append(f"{row.path}: {exc}")
                continue
            if row.algorithm != "sha256":
                found.append(f"{row.path}: hash algorithm {row.algorithm!r}, expected sha256")
            elif digest != row.digest:
                found.append(f"{row.path}: sha256 {digest} but RECORD says {row.digest}")
            if row.size is not None and row.size != size:
                found.append(f"{row.path}: {size} bytes but RECORD says {row.size}")
        mismatches = tuple(found)
    elves = tuple(_elf_result(m, job) for m, job in elf_jobs)
    return WheelFacts(
        path=archive.path,
        size=archive.size,
        name=archive.name,
        version=str(archive.version),
        tags=tuple(sorted(str(t) for t in archive.tags)),
        wheel_tags=_headers(wheel, "Tag"),
        metadata_name=_header(metadata.get("Name")),
        metadata_version=_header(metadata.get("Version")),
        requires_dist=tuple(requirements),
        metadata_errors=tuple(errors),
        requires_python=requires_python,
        classifiers=_headers(metadata, "Classifier"),
        members=tuple(archive.members),
        record=tuple(record),
        digest_mismatches=mismatches,
        elves=elves,
        duplicates=tuple(archive.duplicates),
        special_members=tuple(archive.special_members()),
        fake_shared_objects=fake,
        machos=foreign[0],
        pes=foreign[1],
    )


def _read_needed(
    archive: WheelArchive,
    pool: Executor,
    members: list[Member],
    libraries: frozenset[str],
    symbols: bool,
) -> list[tuple[Member, Future[ElfRead]]]:
    """Read the members named in `libraries`, then those they need, in rounds (their device
    code is not read: a dependency's libraries are read for what they provide)."""
    by_name: dict[str, list[Member]] = {}
    for member in members:
        by_name.setdefault(member.name.rsplit("/", 1)[-1], []).append(member)
    wanted = set(libraries)
    jobs: list[tuple[Member, Future[ElfRead]]] = []
    batch = [m for name in sorted(wanted) for m in by_name.get(name, [])]
    while batch:
        submitted = [(m, pool.submit(_read_elf, archive, m, symbols, None)) for m in batch]
        jobs += submitted
        batch = []
        for _, job in submitted:
            try:
                needed = job.result()[0].needed
            except Exception:  # reported by _elf_result
                continue
            for name in needed:
                if name not in wanted:
                    wanted.add(name)
                    batch += by_name.get(name, [])
    return jobs


def _header(value: object) -> str | None:
    return None if value is None else str(value).strip()


def _headers(message: Message, name: str) -> tuple[str, ...]:
    return tuple(str(v).strip() for v in message.get_all(name) or [])


ElfRead = tuple[ElfInfo, "Future[DeviceCode | None] | None"]


def _read_elf(
    archive: WheelArchive, member: Member, symbols: bool, pool: Executor | None
) -> ElfRead:
    """The member's ELF facts, and (given a pool) the job reading its device code: a job of
    its own on the same source, queued behind the members' reads, so that one library's long
    walk through its fat binaries runs beside the others' reads instead of after its own."""
    info, source = _read_exactly_when_guessed(
        archive,
        member,
        lambda src: read_elf(src, symbols=symbols, device=False),
        (ElfError, MemberError, struct.error),
    )
    return info, pool.submit(read_elf_device, source) if pool is not None else None


def _elf_result(member: Member, job: Future[ElfRead]) -> ElfMember:
    try:
        info, device = job.result()
    except (ElfError, MemberError) as exc:
        return ElfMember(path=member.name, size=member.size, error=str(exc))
    except Exception as exc:  # struct errors on truncated tables and the like
        return ElfMember(path=member.name, size=member.size, error=f"{type(exc).__name__}: {exc}")
    if device is not None:
        try:
            info = dataclasses.replace(info, device=device.result())
        except (ElfError, MemberError, struct.error) as exc:
            info = dataclasses.replace(info, device=DeviceCode(error=f"unreadable: {exc}"))
    return ElfMember(path=member.name, size=member.size, info=info)


def read_elf_members(
    archive: WheelArchive, pool: Executor, *, symbols: bool
) -> tuple[ElfMember, ...]:
    """Every ELF member of an open zip, read on the pool the way a wheel's are, largest first."""
    jobs = [(m, pool.submit(_read_elf, archive, m, symbols, pool)) for m in archive.elf_members()]
    return tuple(_elf_result(m, job) for m, job in jobs)


ForeignJobs = tuple[tuple[MachOMember, ...], tuple[PEMember, ...]]
Info = TypeVar("Info")
Found = TypeVar("Found")


def read_foreign_members(archive: WheelArchive, pool: Executor) -> ForeignJobs:
    """Every Mach-O and PE member of an open zip, read on the pool (headers and load commands,
    the import tables; never code)."""
    found = archive.binary_members()
    machos = [(m, pool.submit(_read_macho, archive, m)) for m in found["Mach-O"]]
    pes = [(m, pool.submit(_read_pe, archive, m)) for m in found["PE"]]
    return (
        tuple(_foreign_result(m, job, MachOMember) for m, job in machos),
        tuple(
            read
            for m, job in pes
            if (read := _foreign_result(m, job, PEMember)).info is not None or read.error
        ),
    )


def _read_exactly_when_guessed(
    archive: WheelArchive,
    member: Member,
    read: Callable[[ByteSource], Info],
    faults: tuple[type[Exception], ...],
) -> tuple[Info, ByteSource]:
    """`read` of the member, and the source it read.  A tail read from a searched deflate
    boundary is checked only by reaching the exact end of the member: when `read` fails on
    bytes served that way, it reads once more from the start before the file is called
    malformed (offsets from a wrong tail may also point past the end of the member).  Bytes
    that were all read exactly would read the same again: the file is malformed as it stands."""
    source = archive.source(member)
    try:
        return read(source), source
    except MemberTooLarge:
        raise
    except faults:
        if not source.guessed:
            raise
    source = archive.source(member, exact=True)
    return read(source), source


def _read_macho(archive: WheelArchive, member: Member) -> MachOInfo:
    return _read_exactly_when_guessed(archive, member, read_macho, (MachOError, MemberError))[0]


def _read_pe(archive: WheelArchive, member: Member) -> PEInfo | None:
    """None for an MZ file with no believable PE header (an MS-DOS program, or a header
    further in than PE_HEAD_LIMIT: what RF-V064 does not believe either)."""
    head = archive.head(member, 64)
    offset = pe_header_offset(head)
    if offset is None or offset > PE_HEAD_LIMIT or offset + 4 > member.size:
        return None
    if archive.source(member).read(offset, 4) != b"PE\0\0":
        return None
    return _read_exactly_when_guessed(archive, member, read_pe, (PEError, MemberError))[0]


def _foreign_result(member: Member, job: Future[Info], kind: Callable[..., Found]) -> Found:
    try:
        return kind(path=member.name, size=member.size, info=job.result())
    except (MachOError, PEError, MemberError) as exc:
        return kind(path=member.name, size=member.size, error=str(exc))
    except Exception as exc:  # struct errors on truncated tables and the like
        return kind(path=member.name, size=member.size, error=f"{type(exc).__name__}: {exc}")
