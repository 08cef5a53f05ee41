"""The pieces of multipart transfers that need no server: how objects are cut into parts
(relforge.stores.parts), the ordered parallel part flow and its bounded memory
(relforge.stores.partflow), the records of started uploads (relforge.stores.resume), S3's
whole and composite checksums (relforge.stores.s3_checksums), and what a request over the
service's ceiling tells the user (relforge.stores.s3_faults)."""

from __future__ import annotations

import base64
import hashlib
import itertools
import random
import threading
import time
import zlib
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from relforge.errors import EnvironmentFault
from relforge.stores.partflow import Buffers, body, run_each, run_parts
from relforge.stores.parts import MAX_PARTS, MIB, MIN_PART, Part, cut, part_size_for
from relforge.stores.resume import Started, UploadBook
from relforge.stores.s3 import S3Store
from relforge.stores.s3_checksums import (
    Sent,
    b64_crc32,
    composite,
    service_composite,
    whole_checksum,
)
from relforge.stores.s3_faults import translate


def test_an_object_is_cut_into_parts_that_cover_it_exactly() -> None:
    parts = cut(23 * MIB + 5, 5 * MIB)
    assert [p.number for p in parts] == [1, 2, 3, 4, 5]
    assert [p.length for p in parts] == [5 * MIB] * 4 + [3 * MIB + 5]
    assert all(a.start + a.length == b.start for a, b in itertools.pairwise(parts))
    assert parts[-1].start + parts[-1].length == 23 * MIB + 5
    assert parts[1].byte_range == f"bytes={5 * MIB}-{10 * MIB - 1}"
    assert [p.length for p in cut(10 * MIB, 5 * MIB)] == [5 * MIB, 5 * MIB]  # no empty tail
    assert cut(0, 5 * MIB) == (Part(number=1, start=0, length=0),)


def test_the_part_size_grows_to_stay_within_ten_thousand_parts() -> None:
    size = 200 * 1024 * MIB  # 200 GiB in 16 MiB parts would be 12,800 parts
    parts = cut(size, 16 * MIB)
    assert len(parts) <= MAX_PARTS
    step = part_size_for(size, 16 * MIB)
    assert step % MIB == 0 and step == 21 * MIB  # the smallest whole MiB that fits
    assert all(p.length == step for p in parts[:-1])
    assert part_size_for(6 * 1024 * MIB, 16 * MIB) == 16 * MIB  # 6 GiB: 384 parts, unchanged
    assert MIN_PART == 5 * MIB


def test_parts_are_hashed_in_order_however_they_finish() -> None:
    data = random.Random(1).randbytes(3 * MIB + 17)
    parts = cut(len(data), 256 * 1024)
    rng = random.Random(2)
    delays = {p.number: rng.uniform(0, 0.01) for p in parts}
    fetched: list[int] = []
    acted: list[int] = []

    def fetch(part: Part, into: memoryview) -> None:
        time.sleep(delays[part.number])  # parts arrive out of order
        into[:] = data[part.start : part.start + part.length]
        fetched.append(part.number)

    got = run_parts(
        parts,
        fetch=fetch,
        act=lambda part, chunk: acted.append(part.number),
        buffers=Buffers(4, 256 * 1024),
        workers=4,
    )
    assert got == hashlib.sha256(data).hexdigest()
    assert fetched != sorted(fetched)
    assert sorted(acted) == [p.number for p in parts]


def test_no_more_parts_are_held_than_the_store_has_buffers() -> None:
    """Two transfers sharing two buffers, eight workers each: at most two parts in memory at
    once, in the same two reused buffers, and neither transfer starves the other into a
    deadlock."""
    buffers = Buffers(2, 1024)
    lock = threading.Lock()
    held = [0, 0]  # now, most
    used: set[int] = set()

    def fetch(part: Part, into: memoryview) -> None:
        with lock:
            held[0] += 1
            held[1] = max(held[1], held[0])
            used.add(id(into.obj))
        time.sleep(0.002)
        into[:] = bytes(part.length)

    def act(part: Part, data: memoryview) -> None:
        with lock:
            held[0] -= 1

    results: list[str] = []

    def transfer() -> None:
        results.append(
            run_parts(cut(64 * 1024, 1024), fetch=fetch, act=act, buffers=buffers, workers=8)
        )

    threads = [threading.Thread(target=transfer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "the transfers deadlocked"
    assert results == [hashlib.sha256(bytes(64 * 1024)).hexdigest()] * 2
    assert held[1] <= 2
    assert len(used) == 2  # allocated once each, then reused for all 128 parts


def test_the_first_failure_stops_the_other_parts_and_is_raised() -> None:
    fetched: list[int] = []

    def fetch(part: Part, into: memoryview) -> None:
        fetched.append(part.number)
        if part.number == 3:
            raise OSError("disk gone")
        time.sleep(0.01)

    with pytest.raises(OSError, match="disk gone"):
        run_parts(cut(100, 1), fetch=fetch, act=None, buffers=Buffers(2, 1), workers=2)
    assert len(fetched) < 20  # the other worker stopped instead of reading all 100 parts
    copied: list[int] = []
    run_each(cut(10, 1), act=lambda p: copied.append(p.number), buffers=Buffers(3, 1), workers=3)
    assert sorted(copied) == list(range(1, 11))


def test_a_part_that_fills_its_buffer_is_sent_without_a_copy() -> None:
    buffer = bytearray(b"abcdef")
    assert body(memoryview(buffer)) is buffer
    assert body(memoryview(buffer)[:4]) == b"abcd"  # the last, shorter part: a copy


def test_a_started_upload_is_found_only_for_the_same_store_key_and_bytes(tmp_path: Path) -> None:
    book = UploadBook(tmp_path / "book")
    started = Started(store="s3://b/p", key="k.whl", sha256="a" * 64, upload_id="U1", part_size=5)
    assert book.find("s3://b/p", "k.whl", "a" * 64) is None
    book.start(started)
    assert book.find("s3://b/p", "k.whl", "a" * 64) == started
    assert book.find("s3://b/p", "k.whl", "b" * 64) is None  # other bytes: never resumed
    assert book.find("s3://other", "k.whl", "a" * 64) is None
    (record,) = (tmp_path / "book").glob("*.json")
    record.write_text('{"store": "s3://b/p", "key": "k.wh', encoding="utf-8")  # cut by a kill
    assert book.find("s3://b/p", "k.whl", "a" * 64) is None
    book.start(started)
    book.finish("s3://b/p", "k.whl", "a" * 64)
    assert list((tmp_path / "book").iterdir()) == []


def _b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_a_multipart_objects_checksum_is_never_taken_for_its_sha256() -> None:
    whole = _b64(b"abc")
    single = {"ETag": '"900150983cd24fb0d6963f7d28e17f72"', "ChecksumSHA256": whole}
    assert whole_checksum(single) == hashlib.sha256(b"abc").hexdigest()
    # moto's HEAD of a multipart object: the composite, bare; only the ETag tells
    assert (
        whole_checksum({"ETag": '"d41d8cd98f00b204e9800998ecf8427e-3"', "ChecksumSHA256": whole})
        is None
    )
    assert whole_checksum({"ETag": '"x"', "ChecksumSHA256": f"{whole}-3"}) is None  # AWS's
    assert (
        whole_checksum({"ETag": '"x-2"', "ChecksumSHA256": whole, "ChecksumType": "FULL_OBJECT"})
        == hashlib.sha256(b"abc").hexdigest()
    )
    parts = [b"one", b"two"]
    sent = {i + 1: Sent(etag="e", checksum=b64_crc32(p)) for i, p in enumerate(parts)}
    crcs = b"".join(zlib.crc32(p).to_bytes(4, "big") for p in parts)
    expected = base64.b64encode(zlib.crc32(crcs).to_bytes(4, "big")).decode()
    assert composite(sent) == expected  # S3's COMPOSITE CRC32: the CRC32 of the parts' CRC32s
    assert composite({**sent, 3: Sent(etag="e", checksum=None)}) is None
    assert service_composite({"ChecksumCRC32": f"{expected}-2"}) == expected


def test_whole_checksum_is_none_for_composite_even_when_the_etag_is_single() -> None:
    answer = {"ETag": '"x"', "ChecksumSHA256": _b64(b"abc"), "ChecksumType": "COMPOSITE"}
    assert whole_checksum(answer) is None


@pytest.mark.parametrize(
    ("action", "code", "message", "setting"),
    [
        ("put", "EntityTooLarge", "Your proposed upload exceeds", "s3_multipart_threshold_mb"),
        ("upload part 3 of", "EntityTooLarge", "too large", "s3_part_size_mb"),
        (
            "copy",
            "InvalidRequest",
            "copy source is larger than the maximum",
            "s3_copy_threshold_mb",
        ),
        ("copy part 2 to", "InvalidRequest", "is larger than allowed", "s3_part_size_mb"),
    ],
)
def test_a_request_over_the_services_ceiling_names_the_setting_to_lower(
    action: str, code: str, message: str, setting: str
) -> None:
    exc = ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}},
        "PutObject",
    )
    got = translate(exc, S3Store(bucket="b"), action, "k.whl")
    assert isinstance(got, EnvironmentFault)
    assert got.key == f"publishing.{setting}" and f"lower publishing.{setting}" in str(got.hint)
