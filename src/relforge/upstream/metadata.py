"""The METADATA of an upstream wheel without downloading it: the PEP 658 `<file>.metadata` the
index offers (checked against the sha256 the page gives), else a few HTTP range requests into the
wheel (the zip's end records, its central directory and the one member).  What cannot be read —
no metadata file and no range support, a hash mismatch, a member that is not there, a Name or
Version that contradicts the file name — is `MetadataUnreadable`: the caller names the file and
skips it, it never guesses.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass

from packaging.utils import canonicalize_name, parse_wheel_filename

from relforge.simplepages import PageFile
from relforge.upstream.index import UpstreamIndex
from relforge.wheelformat import METADATA, WheelError, parse_headers, read_info_file

TAIL = 256 * 1024  # first read from the end: the end records, usually the central directory too
MIN_READ = 64 * 1024  # later reads: at least this much, so zipfile's small reads share a request


class MetadataUnreadable(Exception):
    """Why a wheel's METADATA cannot be read from the index (the message names no host)."""


@dataclass(frozen=True, kw_only=True)
class WheelMetadata:
    file: PageFile
    text: str
    via: str  # "PEP 658" or "range requests"

    def requires_dist(self) -> list[str]:
        headers, _ = parse_headers(self.text.encode(), METADATA)
        return [str(v) for v in headers.get_all("Requires-Dist") or []]


def read_metadata(index: UpstreamIndex, file: PageFile) -> WheelMetadata:
    """The METADATA of one wheel the index lists."""
    data: bytes | None = None
    via = "PEP 658"
    if file.metadata:
        response = index.get(file.url + ".metadata", headers={"Accept-Encoding": "identity"})
        if response.status_code == 200:
            data = response.content
            digest = hashlib.sha256(data).hexdigest()
            if file.metadata_sha256 and digest != file.metadata_sha256:
                raise MetadataUnreadable(
                    f"its .metadata has sha256 {digest}, the index page says {file.metadata_sha256}"
                )
    if data is None:
        via = "range requests"
        data = _metadata_by_ranges(index, file)
    headers, problems = parse_headers(data, METADATA)
    if problems:
        raise MetadataUnreadable(problems[0])
    name, version, _, _ = parse_wheel_filename(file.filename)
    said = (str(headers.get("Name") or ""), str(headers.get("Version") or ""))
    if canonicalize_name(said[0]) != name or said[1] != str(version):
        raise MetadataUnreadable(
            f"its METADATA names {said[0]} {said[1]}, not the file's {name} {version}"
        )
    return WheelMetadata(file=file, text=data.decode("utf-8"), via=via)


def _metadata_by_ranges(index: UpstreamIndex, file: PageFile) -> bytes:
    remote = RangeFile(index, file.url)
    try:
        with zipfile.ZipFile(remote) as zf:
            return read_info_file(zf, file.filename, METADATA)[1]
    except WheelError as exc:
        raise MetadataUnreadable(exc.message) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise MetadataUnreadable(f"not a readable zip ({exc})") from None


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through HTTP range requests; the parts read
    are kept, so zipfile's many small reads cost a handful of requests."""

    def __init__(self, index: UpstreamIndex, url: str) -> None:
        super().__init__()
        self.index = index
        self.url = url
        self.pos = 0
        self.parts: list[tuple[int, bytes]] = []
        self.requests = 0
        start, data, self.size = self._fetch(f"bytes=-{TAIL}")
        self.parts.append((start, data))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]  # io's buffer type is wider
        end = min(self.pos + len(buffer), self.size)
        if end <= self.pos:
            return 0
        data = self._slice(self.pos, end)
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)

    def _slice(self, start: int, end: int) -> bytes:
        for at, data in self.parts:
            if at <= start and end <= at + len(data):
                return data[start - at : end - at]
        stop = min(self.size, max(end, start + MIN_READ))
        got_at, data, _ = self._fetch(f"bytes={start}-{stop - 1}")
        if got_at != start or len(data) < end - start:
            raise OSError(f"the server answered another range than bytes={start}-{stop - 1}")
        self.parts.append((got_at, data))
        return data[: end - start]

    def _fetch(self, wanted: str) -> tuple[int, bytes, int]:
        self.requests += 1
        headers = {"Range": wanted, "Accept-Encoding": "identity"}
        with self.index.get(self.url, headers=headers, stream=True) as response:
            if response.status_code != 206:
                raise MetadataUnreadable(
                    "the index offers no metadata file and the server does not answer range "
                    f"requests (HTTP {response.status_code} to Range: {wanted})"
                )
            unit, _, spec = response.headers.get("Content-Range", "").partition(" ")
            span, _, total = spec.partition("/")
            first, _, _ = span.partition("-")
            if unit != "bytes" or not first.isdigit() or not total.isdigit():
                raise MetadataUnreadable(
                    f"the server's Content-Range {response.headers.get('Content-Range')!r} "
                    "is not bytes START-END/SIZE"
                )
            return int(first), response.content, int(total)
