"""moto's S3 server, holding large objects in files instead of in memory (benchmarks only).

moto 5.2.5 keeps each object in a SpooledTemporaryFile (on disk) but reads the whole object into
memory — twice — whenever it touches it: a ranged GET and an UploadPartCopy read every byte to
return a slice, and CompleteMultipartUpload joins the parts in a bytearray and copies it.  For a
6 GiB object that is 12 GiB of memory per request, which this 24 GiB machine cannot give.  These
patches change where moto keeps the bytes, not what it answers:

- an object larger than LARGE hands its readers a read-only view of its file (length, slices and
  chunked iteration read only what they need), so a ranged GET or a part copy reads its range;
- CompleteMultipartUpload writes the parts one after another into a temporary file, which the
  completed object then keeps as its bytes.

    python benchmarks/lean_moto.py -H 127.0.0.1 -p PORT     (the arguments of moto_server)
"""

from __future__ import annotations

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
    """The parts of a completed upload, already written one after another into `file`."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.size = file, size

    def __len__(self) -> int:
        return self.size


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
            self._value_buffer = new_value.file  # the completed object keeps the joined file
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
        """FakeMultipart.complete, writing the parts to a file instead of a bytearray."""
        checksum_builder = MultipartChecksumBuilder(
            self.metadata.get("x-amz-checksum-algorithm"), self.metadata.get("x-amz-checksum-type")
        )
        joined = tempfile.TemporaryFile()  # noqa: SIM115  # kept by the completed object
        md5s = bytearray()
        last, count, size = None, 0, 0
        try:
            for pn, etag in body:
                part = self.parts.get(pn)
                if part is None or part.etag.replace('"', "") != etag.replace('"', ""):
                    raise InvalidPart()
                if last is not None and last.contentsize < S3_UPLOAD_PART_MIN_SIZE:
                    raise EntityTooSmall()
                md5s.extend(bytes.fromhex(part.etag.replace('"', "")))
                value = plain_get(part)  # a part is at most 5 GiB; here 16–64 MiB
                joined.write(value)
                checksum_builder.addPart(value)
                size += len(value)
                last, count = part, count + 1
            if count == 0:
                raise MalformedXML
        except BaseException:
            joined.close()
            raise
        full_etag = md5_hash()
        full_etag.update(bytes(md5s))
        return Joined(joined, size), f"{full_etag.hexdigest()}-{count}", checksum_builder.build()

    FakeMultipart.complete = complete  # type: ignore[method-assign]


def main() -> None:
    patch()
    from moto.server import main as moto_main

    moto_main()


if __name__ == "__main__":
    main()
