"""moto's S3 server, holding large objects in files instead of in memory (benchmarks only).

moto 5.2.5 keeps each object in a SpooledTemporaryFile (on disk) but reads the whole object into
memory — twice — whenever it touches it: a ranged GET and an UploadPartCopy read every byte to
return a slice, and CompleteMultipartUpload joins the parts in a bytearray and copies it.  For a
6 GiB object that is 12 GiB of memory per request, which this 24 GiB machine cannot give.  These
patches change where moto keeps the bytes, not what it answers:

- an object larger than LARGE hands its readers a read-only view of its file (length, slices and
  chunked iteration read only what they need), so a ranged GET or a part copy reads its range;
- a CopyObject of a large object reads it chunk by chunk (its checksum too);
- CompleteMultipartUpload hands the parts' files to the completed object, read one after another
  (no copy: a 6 GiB completion is as quick as a small one, and the disk holds the bytes once).

    python benchmarks/lean_moto.py -H 127.0.0.1 -p PORT     (the arguments of moto_server)
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import itertools
import tempfile
import threading
from collections.abc import Iterator
from typing import IO, Any

LARGE = 64 << 20  # objects above this are read through a view
CHUNK = 1 << 20


class FileView:
    """A read-only, bytes-like window on an object's file (len, slices, iteration)."""

    def __init__(self, buffer: IO[bytes], size: int, lock: threading.Lock) -> None:
        self.buffer, self.size, self.lock = buffer, size, lock

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, item: slice) -> bytes:
        start, stop, step = item.indices(self.size)
        assert step == 1, "moto slices objects contiguously"
        with self.lock:
            self.buffer.seek(start)
            return self.buffer.read(max(0, stop - start))

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, self.size, CHUNK):
            yield self[start : start + CHUNK]


class Joined:
    """The bytes of a completed upload: its parts' files, one after another (read-only)."""

    def __init__(self, pieces: list[tuple[IO[bytes], int]]) -> None:
        self.pieces = pieces
        self.starts = list(itertools.accumulate((size for _, size in pieces), initial=0))
        self.size = self.starts[-1]
        self.pos = 0

    def __len__(self) -> int:
        return self.size

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else self.size + pos if whence == 2 else self.pos + pos
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        out = []
        while self.pos < end:
            index = bisect.bisect_right(self.starts, self.pos) - 1
            piece, size = self.pieces[index]
            offset = self.pos - self.starts[index]
            piece.seek(offset)
            block = piece.read(min(end - self.pos, size - offset))
            out.append(block)
            self.pos += len(block)
        return b"".join(out)

    def close(self) -> None:
        for piece, _ in self.pieces:
            piece.close()


def patch() -> None:
    from moto.s3.exceptions import EntityTooSmall, InvalidPart, MalformedXML
    from moto.s3.models import FakeKey, FakeMultipart, MultipartChecksumBuilder
    from moto.settings import S3_UPLOAD_PART_MIN_SIZE
    from moto.utilities.utils import md5_hash

    plain = FakeKey.__dict__["value"]  # the property object itself
    plain_get, plain_set = plain.fget, plain.fset

    def get_value(self: Any) -> Any:
        if self.contentsize > LARGE:
            return FileView(self._value_buffer, self.contentsize, self.lock)
        return plain_get(self)

    def set_value(self: Any, new_value: Any) -> None:
        if isinstance(new_value, Joined):
            self._value_buffer.close()
            self._value_buffer = new_value  # the completed object reads its parts' files
            self.contentsize = new_value.size
            return
        if isinstance(new_value, FileView):  # a copy of a large object, chunk by chunk
            self._value_buffer.seek(0)
            self._value_buffer.truncate()
            for block in new_value:
                self._value_buffer.write(block)
            self.contentsize = len(new_value)
            return
        plain_set(self, new_value)

    FakeKey.value = property(get_value, set_value)  # type: ignore[assignment]

    def complete(self: Any, body: Any) -> tuple[Any, str, Any]:
        """FakeMultipart.complete, handing over the parts' files instead of joining bytes."""
        checksum_builder = MultipartChecksumBuilder(
            self.metadata.get("x-amz-checksum-algorithm"), self.metadata.get("x-amz-checksum-type")
        )
        chosen: list[Any] = []
        for pn, etag in body:
            part = self.parts.get(pn)
            if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
                raise InvalidPart()
            if chosen and chosen[-1].contentsize < S3_UPLOAD_PART_MIN_SIZE:
                raise EntityTooSmall()
            chosen.append(part)
        if not chosen:
            raise MalformedXML
        md5s = bytearray()
        pieces = []
        for part in chosen:
            md5s.extend(bytes.fromhex(part.etag.replace('"', "")))
            checksum_builder.addPart(plain_get(part))  # a part is at most 5 GiB; here 16 MiB
            pieces.append((part._value_buffer, part.contentsize))
            part._value_buffer = tempfile.SpooledTemporaryFile()  # noqa: SIM115  # closed by the part
        count = len(chosen)
        full_etag = md5_hash()
        full_etag.update(bytes(md5s))
        return Joined(pieces), f"{full_etag.hexdigest()}-{count}", checksum_builder.build()

    FakeMultipart.complete = complete  # type: ignore[method-assign]

    from moto.s3 import responses

    plain_checksum = responses.compute_checksum  # type: ignore[attr-defined]

    def compute_checksum(body: Any, algorithm: str, encode_base64: bool = True) -> bytes:
        """The checksum of a CopyObject's source, read through the view chunk by chunk."""
        if not isinstance(body, FileView):
            return plain_checksum(body, algorithm, encode_base64)
        if algorithm.startswith("CRC"):  # moto's own fallback for the CRCs it lacks: CRC32
            crc = 0
            for block in body:
                crc = binascii.crc32(block, crc)
            digest = crc.to_bytes(4, "big")
        else:
            hashed = hashlib.sha1() if algorithm == "SHA1" else hashlib.sha256()
            for block in body:
                hashed.update(block)
            digest = hashed.digest()
        return base64.b64encode(digest) if encode_base64 else digest

    responses.compute_checksum = compute_checksum  # type: ignore[attr-defined]


def main() -> None:
    patch()
    from moto.server import main as moto_main

    moto_main()


if __name__ == "__main__":
    main()
