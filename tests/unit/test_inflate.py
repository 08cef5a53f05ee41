"""Random access into deflated zip members: prefix reads and tail reads from a searched boundary."""

from __future__ import annotations

import io
import random
import zipfile
import zlib

import pytest

from relforge.validate import inflate, streams
from relforge.validate.inflate import BytesSource, DeflateSource, MemberError


def _data(size: int, seed: int = 7) -> bytes:
    """Compressible, not trivial bytes: words from a vocabulary that changes every 64 KiB, with
    some incompressible runs.  (A string repeated through the whole tail would keep the bytes
    copied from the unknown window unknown: the reader then falls back to the exact prefix.)"""
    rng = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        words = [
            bytes(rng.choice(b"abcdefghijklmnop_") for _ in range(rng.randint(3, 12)))
            for _ in range(200)
        ]
        segment_end = len(out) + (64 << 10)
        while len(out) < segment_end:
            if rng.random() < 0.02:
                out += rng.randbytes(rng.randint(100, 3000))
            else:
                out += rng.choice(words) + b"\x00"
    return bytes(out[:size])


def _member(data: bytes, level: int = 6) -> memoryview:
    raw = zlib.compressobj(level, zlib.DEFLATED, -15)
    return memoryview(raw.compress(data) + raw.flush())


@pytest.fixture
def eager_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every far read a tail read, whatever it costs."""
    monkeypatch.setattr(inflate, "SMALL_MEMBER", 0)
    monkeypatch.setattr(inflate, "TAIL_OVERHEAD", -(1 << 40))
    monkeypatch.setattr(inflate, "CONVERGE_MARGIN", 64 << 10)


def test_tail_reads_are_exact(eager_tail: None) -> None:
    data = _data(6 << 20)
    src = DeflateSource(_member(data), len(data))
    assert src.read(0, 100) == data[:100]
    for offset, length in (
        (len(data) - 5000, 5000),
        (len(data) - 300_000, 1000),
        (len(data) - 1, 1),
    ):
        assert src.read(offset, length) == data[offset : offset + length]
    assert src._tails, "the reads should have come from a tail pass"


def test_a_late_tail_is_chained_to(eager_tail: None) -> None:
    data = _data(8 << 20, seed=21)
    src = DeflateSource(_member(data), len(data))
    assert src.read(len(data) - 1000, 1000) == data[-1000:]
    late = min(t.start for t in src._tails)
    at = late - (2 << 20)  # before the tail read so far: reached by a tail that stops at it
    assert src.read(at, 512) == data[at : at + 512]
    chained = [t for t in src._tails if t.start <= at]
    assert chained and all(t.start < late for t in chained)
    assert src.inflated < len(data)


def test_tail_reads_through_stored_blocks(eager_tail: None) -> None:
    rng = random.Random(3)
    data = _data(2 << 20) + rng.randbytes(2 << 20) + _data(2 << 20, seed=9)
    src = DeflateSource(_member(data), len(data))
    assert src.read(0, 64) == data[:64]
    at = len(data) - (3 << 20)  # inside the incompressible (stored) part
    assert src.read(at, 4096) == data[at : at + 4096]


def test_unsettled_window_falls_back_to_the_prefix(eager_tail: None) -> None:
    rng = random.Random(5)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(8)) for _ in range(50)]
    data = b"".join(b"_ZN5torch" + rng.choice(words) + b"\x00" for _ in range(400_000))
    src = DeflateSource(_member(data), len(data))
    assert src.read(len(data) - 100, 100) == data[-100:]  # exact, whatever path it took


def test_exact_source_never_uses_a_tail(eager_tail: None) -> None:
    data = _data(3 << 20)
    src = DeflateSource(_member(data), len(data), exact=True)
    assert src.read(len(data) - 10, 10) == data[-10:]
    assert not src._tails and src.inflated >= len(data) - 10


def test_reads_past_the_end_and_corrupt_data_are_errors() -> None:
    data = _data(100_000)
    src = DeflateSource(_member(data), len(data))
    with pytest.raises(MemberError, match="past the end"):
        src.read(len(data) - 5, 10)
    broken = bytearray(_member(data))
    broken[10:40] = b"\xff" * 30
    with pytest.raises(MemberError):
        DeflateSource(memoryview(bytes(broken)), len(data)).read(0, len(data))
    with pytest.raises(MemberError):
        BytesSource(b"abc").read(2, 5)


def test_zip_member_from_zipfile(eager_tail: None) -> None:
    data = _data(4 << 20, seed=11)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("lib/libx.so", data)
    raw = buf.getvalue()
    info = zipfile.ZipFile(io.BytesIO(raw)).getinfo("lib/libx.so")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    src = DeflateSource(memoryview(raw)[start : start + info.compress_size], info.file_size)
    assert src.read(len(data) - 70_000, 70_000) == data[-70_000:]


def _stored_block(content: bytes, *, final: bool) -> bytes:
    n = len(content)
    header = bytes([int(final)]) + n.to_bytes(2, "little") + (n ^ 0xFFFF).to_bytes(2, "little")
    return header + content


def _embedding_member(*, final: bool) -> tuple[memoryview, bytes, int]:
    """A member whose deflate stream holds, in a stored block, a raw deflate stream of its own:
    (compressed member, its bytes, compressed position where the embedded stream starts).

    `final`: the stored block is the last one and the embedded stream ends the member.
    Otherwise the embedded stream ends with a stored block that closes exactly where the real
    stored block does, and the member goes on with compressed data."""
    rng = random.Random(4)
    head = zlib.compressobj(6, zlib.DEFLATED, -15)
    prefix = _data(3 << 20, seed=4)
    out = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)  # ends byte-aligned
    inner = zlib.compressobj(9, zlib.DEFLATED, -15)
    benign = _data(30_000, seed=5)
    lead = rng.randbytes(5000)
    at = len(out) + 5 + len(lead)
    if final:
        content = lead + inner.compress(benign) + inner.flush()
        return memoryview(out + _stored_block(content, final=True)), prefix + content, at
    embedded = inner.compress(benign) + inner.flush(zlib.Z_FULL_FLUSH)
    content = lead + embedded + _stored_block(rng.randbytes(3000), final=False)
    rest = _data(1 << 20, seed=6)
    tail = zlib.compressobj(6, zlib.DEFLATED, -15)
    member = out + _stored_block(content, final=False) + tail.compress(rest) + tail.flush()
    return memoryview(member), prefix + content + rest, at


@pytest.mark.parametrize("final", [True, False], ids=["ends-the-member", "rejoins-the-member"])
def test_a_deflate_stream_stored_inside_the_member_is_no_boundary(
    eager_tail: None, monkeypatch: pytest.MonkeyPatch, final: bool
) -> None:
    """Inflating from the embedded stream's start reaches the member's end (or rejoins its
    stream) as a real boundary would; its bytes must not be taken for the member's."""
    member, data, at = _embedding_member(final=final)
    assert zlib.decompress(member, -15) == data
    # the bytes the embedded stream would claim: where the member's output ends minus its size
    claimed = len(data) - 3000 if final else len(data) - (1 << 20) - 30_000
    for guess in range(at - 2000, at + 20_000, 2003):  # boundary searches start near it
        monkeypatch.setattr(DeflateSource, "_estimate", lambda self, offset, g=guess: g)
        src = DeflateSource(member, len(data))
        assert src.read(claimed, 3000) == data[claimed : claimed + 3000], guess


# -- bounded memory (issue 13) ----------------------------------------------------------------


def test_reads_past_the_prefix_limit_are_streamed_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inflate, "PREFIX_LIMIT", 1 << 20)
    monkeypatch.setattr(inflate, "TAIL_OVERHEAD", 1 << 40)  # no tail passes: only the stream
    data = _data(6 << 20, seed=13)
    src = DeflateSource(_member(data), len(data))
    for offset, length in ((5 << 20, 4096), (2 << 20, 100), (100, 50), ((5 << 20) + 9, 7)):
        assert src.read(offset, length) == data[offset : offset + length]
    assert len(src._prefix) <= (1 << 20) + inflate.OUT_STEP  # the prefix stopped at the limit


def test_one_read_larger_than_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "READ_LIMIT", 1 << 20)
    data = _data(3 << 20)
    with pytest.raises(inflate.MemberTooLarge, match="too large to inspect"):
        DeflateSource(_member(data), len(data)).read(0, 2 << 20)
    with pytest.raises(inflate.MemberTooLarge):
        BytesSource(data).read(0, 2 << 20)


def test_no_inflate_call_produces_more_than_a_step() -> None:
    zeros = _member(bytes(64 << 20), level=9)  # 64 MiB from about 64 KB: 1000:1
    pieces = list(inflate.bounded(zlib.decompressobj(-15), zeros))
    assert sum(map(len, pieces)) == 64 << 20
    assert max(map(len, pieces)) <= inflate.OUT_STEP


def test_a_tail_keeps_only_its_ends_and_refills_the_middle(
    eager_tail: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inflate, "TAIL_KEEP", 256 << 10)
    monkeypatch.setattr(inflate, "CONVERGE_MARGIN", 2 << 20)  # tails start far before the read
    data = _data(8 << 20, seed=17)
    src = DeflateSource(_member(data), len(data))
    at = len(data) - (3 << 20)
    assert src.read(at, 1000) == data[at : at + 1000]
    kept = sum(len(d) for t in src._tails for _, d in t.segments)
    assert kept <= 4 * (256 << 10) + 2 * inflate.OUT_STEP


def test_a_join_is_checked_however_well_the_member_compresses(
    eager_tail: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of zeros inflate a thousandfold: checking the join to a later tail must stop after
    the bytes it compares, not at the end of a MiB of input (a GiB of output), which pushed
    those bytes out of what the tail keeps — the chain was refused and the read inflated all
    the member before it.  (A hostile 4 GiB wheel took 16 s of CPU to inspect, 8 s now.)"""
    monkeypatch.setattr(inflate, "TAIL_KEEP", 4 << 20)
    mib = 1 << 20
    data = bytearray()
    pieces = []
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    for n in range(256):  # each MiB marked, then flushed: block boundaries every MiB
        chunk = n.to_bytes(4, "little") * 16 + bytes(mib - 64)
        data += chunk
        pieces.append(deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH))
    pieces.append(deflate.flush())
    src = DeflateSource(memoryview(b"".join(pieces)), len(data))
    at = 128 * mib + 4096  # the first tail starts late, past it: a second is chained to that
    assert src.read(at, 64) == data[at : at + 64]
    assert len(src._tails) == 2 and src._tails[1].start <= at < src._tails[0].start
    assert src.guessed  # served from the chained tail, not from inflating the first 128 MiB
