"""The wheel format (binary distribution format spec) as every stage reads it: the one
`.dist-info` directory, its METADATA and WHEEL files as UTF-8 headers, RECORD's rows, wheel file
names, and `WheelError`.

The builder (Requires-Dist edits), validation (`validate.wheel.WheelArchive`, which reads members
in place) and publishing (PEP 658 sidecars, the local-version strip) all use these; RECORD's hash
form is `relforge.record`.
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from relforge.errors import ConfigError

METADATA = "METADATA"
WHEEL = "WHEEL"
RECORD = "RECORD"


class WheelError(ConfigError):
    """A file that is not a readable wheel: not a zip, a bad name, missing `.dist-info` files
    (exit 2).  `str()` is the bare message, as stages put it into their own findings."""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, kw_only=True)
class WheelName:
    """A wheel file name split into its parts, keeping the text as written."""

    distribution: str
    version: str
    rest: str  # "[build-]python-abi-platform.whl"

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        try:
            parse_wheel_filename(filename)
        except InvalidWheelFilename as exc:
            raise WheelError(f"{filename}: not a wheel file name ({exc})") from None
        dist, version, rest = filename.split("-", 2)
        return cls(distribution=dist, version=version, rest=rest)

    @property
    def filename(self) -> str:
        return f"{self.distribution}-{self.version}-{self.rest}"

    @property
    def public_version(self) -> str:
        return self.version.partition("+")[0]


def dist_info_dir(names: Iterable[str], wheel: str) -> str:
    """The one top-level `<name>-<version>.dist-info` directory among a wheel's member names
    (`wheel` names the file in the error)."""
    dirs = {top for top in (n.split("/", 1)[0] for n in names) if top.endswith(".dist-info")}
    if len(dirs) != 1:
        found = ", ".join(sorted(dirs)) or "none"
        raise WheelError(f"{wheel}: expected one .dist-info directory, found {found}")
    return dirs.pop()


def parse_headers(data: bytes, name: str) -> tuple[Message, tuple[str, ...]]:
    """Parse an RFC 822 style file (METADATA, WHEEL) as UTF-8 text, core metadata's encoding;
    returns the headers and what is wrong with the encoding, if anything.

    Parsing bytes would turn every non-ASCII header into an `email.header.Header` object (a
    `Requires-Dist: numpy; extra == 'é'` then crashed `Requirement()`); undecodable bytes are
    replaced and reported instead.
    """
    try:
        text = data.decode("utf-8")
        problems: tuple[str, ...] = ()
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        problems = (f"{name} is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})",)
    return Parser().parsestr(text), problems  # compat32: header values stay str


@dataclass(frozen=True)
class RecordRow:
    """One line of RECORD: a path, its hash (`sha256`, urlsafe base64) and size, as written."""

    path: str
    algorithm: str
    digest: str
    size: int | None  # None: empty or not a number


def record_rows(text: str, name: str) -> list[list[str]]:
    """RECORD's CSV rows, as the csv module reads them (empty lines kept as empty rows);
    WheelError when it is not CSV (a field over csv's size limit, an unclosed quote)."""
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise WheelError(f"{name} is not CSV ({exc})") from None


def parse_record(text: str, name: str) -> list[RecordRow]:
    """RECORD's rows split into path, hash algorithm, digest and size (short rows padded)."""
    if "\x00" in text:
        raise WheelError(f"{name} holds a NUL byte")
    rows = []
    for fields in record_rows(text, name):
        if not fields:
            continue
        path, hashed, size = ([*fields, "", ""])[:3]
        algorithm, _, digest = hashed.partition("=")
        number = int(size) if size.isascii() and size.isdigit() else None
        rows.append(RecordRow(path, algorithm, digest, number))
    return rows


def read_info_file(zf: zipfile.ZipFile, wheel: str, file: str) -> tuple[str, bytes]:
    """The `.dist-info` directory of an open wheel and the bytes of one file in it."""
    info_dir = dist_info_dir(zf.namelist(), wheel)
    try:
        return info_dir, zf.read(f"{info_dir}/{file}")
    except KeyError:
        raise WheelError(f"{wheel}: no member {info_dir}/{file}") from None
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise WheelError(f"{wheel}: not a readable wheel ({exc})") from None


def core_metadata(wheel: Path) -> bytes:
    """The wheel's METADATA file, byte for byte: what PEP 658 serves as `<file>.metadata`."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            return read_info_file(zf, str(wheel), METADATA)[1]
    except (zipfile.BadZipFile, OSError) as exc:
        raise WheelError(f"{wheel}: not a readable wheel ({exc})") from None


def metadata_headers(wheel: Path) -> Message:
    """The headers of the wheel's METADATA; WheelError when it is not UTF-8."""
    data = core_metadata(wheel)
    headers, problems = parse_headers(data, f"{wheel.name} METADATA")
    if problems:
        raise WheelError(problems[0])
    return headers


def requires_python(metadata: bytes) -> str | None:
    """The Requires-Python of METADATA bytes (None when absent or empty)."""
    value = parse_headers(metadata, METADATA)[0].get("Requires-Python")
    return str(value).strip() if value else None
