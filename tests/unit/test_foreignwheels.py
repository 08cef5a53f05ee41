"""The pinned real macOS and Windows wheels (tests/foreignwheels.py): each arrives once, with its
pinned hash, and holds the binaries its role promises, told by their magic numbers; and the
cache behind them (hash check, atomic rename, one download among concurrent workers, a skip that
says why when PyPI is out of reach)."""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
import zipfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Literal

import pytest
from packaging.utils import parse_wheel_filename

from tests import foreignwheels
from tests.foreignwheels import (
    PINS,
    ROLES,
    ForeignWheel,
    ForeignWheelError,
    ForeignWheelUnavailable,
    Role,
    fetch_pin,
    foreign_wheel,
    pip_download,
    sha256_of,
)

MH_MAGIC_64 = 0xFEEDFACF  # thin 64-bit Mach-O, stored little-endian by both architectures
FAT_MAGIC = 0xCAFEBABE  # fat (universal) Mach-O header, big-endian
CPU_X86_64 = 0x01000007
CPU_ARM64 = 0x0100000C
PE_AMD64 = 0x8664  # COFF machine
PE_ARM64 = 0xAA64

Format = Literal["mach-o", "pe"]


@dataclass(frozen=True)
class Binary:
    format: Format
    machines: frozenset[int]  # Mach-O cputypes (one per slice), or the PE's COFF machine


def binary_of(data: bytes) -> Binary | None:
    """What a member is by its magic number: thin or fat Mach-O, PE, or neither."""
    if len(data) >= 8 and struct.unpack_from("<I", data)[0] == MH_MAGIC_64:
        return Binary("mach-o", frozenset({struct.unpack_from("<I", data, 4)[0]}))
    if len(data) >= 8 and struct.unpack_from(">I", data)[0] == FAT_MAGIC:
        (count,) = struct.unpack_from(">I", data, 4)
        cputypes = (struct.unpack_from(">I", data, 8 + 20 * i)[0] for i in range(count))
        return Binary("mach-o", frozenset(cputypes))
    if len(data) >= 0x40 and data[:2] == b"MZ":
        (pe_offset,) = struct.unpack_from("<I", data, 0x3C)
        if data[pe_offset : pe_offset + 4] == b"PE\0\0":
            return Binary("pe", frozenset({struct.unpack_from("<H", data, pe_offset + 4)[0]}))
    return None


def bundled_folder(member: str) -> bool:
    """A library a repair tool put into the wheel: delocate's `<package>/.dylibs/`,
    delvewheel's top-level `<project>.libs/`."""
    parts = PurePosixPath(member).parts
    return ".dylibs" in parts[:-1] or (len(parts) > 1 and parts[0].endswith(".libs"))


def tag_macos_min(platform: str) -> tuple[int, int]:
    """The minimum macOS of a platform tag: macosx_10_13_universal2 → (10, 13)."""
    _, major, minor, _ = platform.split("_", 3)
    return int(major), int(minor)


@dataclass(frozen=True, kw_only=True)
class Contents:
    """What a pinned wheel holds: its binary members (member → machines) and the file names of
    the libraries bundled by a repair tool; for macOS, the minimum macOS of the platform tag."""

    binaries: dict[str, frozenset[int]]
    bundled: frozenset[str] = field(default_factory=frozenset)
    macos_min: tuple[int, int] | None = None


ARM64 = frozenset({CPU_ARM64})
X86_64 = frozenset({CPU_X86_64})
SIMPLEJSON_MACOS = "simplejson/_speedups.cpython-313-darwin.so"
GEOS_DLLS = (
    "geos-bf067cd6ff74ee0ad5f3ff52c7ef08c9.dll",
    "geos_c-6dd9fd915eef8a7928285416bef1e666.dll",
    "msvcp140-0fa7eb792d3fbcf2233e4ea47e9144b9.dll",
)
CONTENTS: dict[Role, Contents] = {
    "macos-arm64": Contents(binaries={SIMPLEJSON_MACOS: ARM64}, macos_min=(11, 0)),
    "macos-universal2": Contents(binaries={SIMPLEJSON_MACOS: ARM64 | X86_64}, macos_min=(10, 13)),
    "macos-x86_64": Contents(binaries={SIMPLEJSON_MACOS: X86_64}, macos_min=(10, 13)),
    "win-amd64": Contents(
        binaries={"simplejson/_speedups.cp313-win_amd64.pyd": frozenset({PE_AMD64})}
    ),
    "win-arm64": Contents(
        binaries={"simplejson/_speedups.cp313-win_arm64.pyd": frozenset({PE_ARM64})}
    ),
    "macos-bundled-dylib": Contents(
        binaries={
            "shapely/lib.cpython-313-darwin.so": ARM64,
            "shapely/_geometry_helpers.cpython-313-darwin.so": ARM64,
            "shapely/_geos.cpython-313-darwin.so": ARM64,
            "shapely/.dylibs/libgeos.3.14.1.dylib": ARM64,
            "shapely/.dylibs/libgeos_c.1.20.5.dylib": ARM64,
        },
        bundled=frozenset({"libgeos.3.14.1.dylib", "libgeos_c.1.20.5.dylib"}),
        macos_min=(11, 0),
    ),
    "win-bundled-dll": Contents(
        binaries={
            "shapely/lib.cp313-win_amd64.pyd": frozenset({PE_AMD64}),
            "shapely/_geometry_helpers.cp313-win_amd64.pyd": frozenset({PE_AMD64}),
            "shapely/_geos.cp313-win_amd64.pyd": frozenset({PE_AMD64}),
            **{f"shapely.libs/{name}": frozenset({PE_AMD64}) for name in GEOS_DLLS},
        },
        bundled=frozenset(GEOS_DLLS),
    ),
}


def test_every_role_has_a_pin_and_its_expected_contents() -> None:
    assert set(PINS) == set(ROLES) == set(CONTENTS)
    assert all(pin.role == role for role, pin in PINS.items())


@pytest.fixture(scope="module", params=ROLES)
def pinned(request: pytest.FixtureRequest) -> tuple[ForeignWheel, Path]:
    """Each pinned wheel, fetched once for this file (and once for all runs: the cache)."""
    role: Role = request.param
    return PINS[role], foreign_wheel(role)


def test_the_cached_file_is_the_pinned_one(pinned: tuple[ForeignWheel, Path]) -> None:
    pin, path = pinned
    assert path.name == pin.filename
    assert sha256_of(path) == pin.sha256
    assert zipfile.is_zipfile(path)


def test_binaries_are_of_the_role_s_format_and_machines(
    pinned: tuple[ForeignWheel, Path],
) -> None:
    pin, path = pinned
    expected = CONTENTS[pin.role]
    with zipfile.ZipFile(path) as wheel:
        members = {name: wheel.read(name) for name in wheel.namelist() if not name.endswith("/")}
    binaries = {name: kind for name, data in members.items() if (kind := binary_of(data))}
    bundled = sorted(PurePosixPath(name).name for name in binaries if bundled_folder(name))
    tags = parse_wheel_filename(pin.filename)[3]
    macos_min = {tag_macos_min(t.platform) for t in tags if t.platform.startswith("macosx_")}
    print(  # the report: pytest -rP or -s shows it
        f"{pin.role}: {pin.filename}, {path.stat().st_size} bytes; binaries "
        + ", ".join(f"{n} ({b.format} {sorted(map(hex, b.machines))})" for n, b in binaries.items())
        + (f"; bundled {', '.join(bundled)}" if bundled else "")
        + (f"; macOS >= {'.'.join(map(str, min(macos_min)))}" if macos_min else "")
    )

    wanted: Format = "mach-o" if pin.role.startswith("macos") else "pe"
    assert {n: b.format for n, b in binaries.items()} == dict.fromkeys(expected.binaries, wanted)
    assert {n: b.machines for n, b in binaries.items()} == expected.binaries
    assert set(bundled) == expected.bundled
    if expected.macos_min is not None:
        assert macos_min == {expected.macos_min}


def test_bundled_libraries_are_named_by_another_binary_of_the_wheel(
    pinned: tuple[ForeignWheel, Path],
) -> None:
    """Each library a repair tool bundled is loaded by name from an extension or from another
    bundled library: the wheel is a case for "resolves inside the wheel"."""
    pin, path = pinned
    with zipfile.ZipFile(path) as wheel:
        binaries = {name: wheel.read(name) for name in CONTENTS[pin.role].binaries}
    for library in CONTENTS[pin.role].bundled:
        users = [
            name
            for name, data in binaries.items()
            if PurePosixPath(name).name != library and library.encode() in data
        ]
        assert users, f"{library} is bundled in {pin.filename} but no binary there names it"


# The cache, with a stand-in for pip: no network needed.

DEMO_BYTES = b"PK\5\6" + bytes(18)  # an empty zip


def demo_pin(sha256: str) -> ForeignWheel:
    return ForeignWheel(
        role="win-amd64",
        project="demo",
        version="1.0",
        filename="demo-1.0-cp313-cp313-win_amd64.whl",
        sha256=sha256,
        platform="win_amd64",
        python_version="3.13",
        abi="cp313",
    )


class FakePip:
    """Writes `data` as the pinned file, counting the downloads; slow enough to overlap."""

    def __init__(self, data: bytes = DEMO_BYTES, delay: float = 0.0) -> None:
        self.data, self.delay, self.calls = data, delay, 0
        self._count = threading.Lock()

    def __call__(self, pin: ForeignWheel, dest: Path) -> None:
        with self._count:
            self.calls += 1
        time.sleep(self.delay)
        (dest / pin.filename).write_bytes(self.data)


def demo_sha256(tmp_path: Path) -> str:
    sample = tmp_path / "sample"
    sample.write_bytes(DEMO_BYTES)
    return sha256_of(sample)


def test_a_second_fetch_uses_the_cache(tmp_path: Path) -> None:
    pin, pip = demo_pin(demo_sha256(tmp_path)), FakePip()
    cache = tmp_path / "cache"
    first = fetch_pin(pin, cache, pip)
    assert fetch_pin(pin, cache, pip) == first == cache / pin.filename
    assert pip.calls == 1
    assert first.read_bytes() == DEMO_BYTES
    assert sorted(p.name for p in cache.iterdir()) == [pin.filename, f"{pin.filename}.lock"]


def test_a_damaged_cached_file_is_fetched_again(tmp_path: Path) -> None:
    pin, pip = demo_pin(demo_sha256(tmp_path)), FakePip()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / pin.filename).write_bytes(b"truncated")
    assert fetch_pin(pin, cache, pip).read_bytes() == DEMO_BYTES
    assert pip.calls == 1


def test_a_hash_mismatch_names_the_file_and_both_hashes(tmp_path: Path) -> None:
    pin = demo_pin("0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ForeignWheelError) as caught:
        fetch_pin(pin, cache, FakePip())
    assert not isinstance(caught.value, ForeignWheelUnavailable)  # a failure, not a skip
    message = str(caught.value)
    assert pin.filename in message
    assert "0" * 64 in message
    assert demo_sha256(tmp_path) in message
    assert sorted(p.name for p in cache.iterdir()) == [f"{pin.filename}.lock"]


def test_pip_giving_another_file_fails(tmp_path: Path) -> None:
    pin = demo_pin(demo_sha256(tmp_path))

    def other_file(pin: ForeignWheel, dest: Path) -> None:
        (dest / "demo-1.0-py3-none-any.whl").write_bytes(DEMO_BYTES)

    with pytest.raises(ForeignWheelError, match=re.escape("it gave demo-1.0-py3-none-any.whl")):
        fetch_pin(pin, tmp_path / "cache", other_file)


def test_concurrent_fetches_download_once(tmp_path: Path) -> None:
    pin, pip = demo_pin(demo_sha256(tmp_path)), FakePip(delay=0.3)
    cache = tmp_path / "cache"
    results: list[Path] = []
    workers = [
        threading.Thread(target=lambda: results.append(fetch_pin(pin, cache, pip)))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [cache / pin.filename] * 4
    assert pip.calls == 1


def test_an_unreachable_index_is_a_download_failure(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pin = PINS["win-amd64"]
    download = partial(pip_download, index_url=f"http://127.0.0.1:{port}/simple")
    with pytest.raises(ForeignWheelUnavailable) as caught:
        fetch_pin(pin, tmp_path / "cache", download)
    assert str(caught.value).startswith(f"{pin.filename} could not be fetched from PyPI: ")
    assert "Connection refused" in str(caught.value)


def test_the_fixture_helper_skips_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(role: Role) -> Path:
        raise ForeignWheelUnavailable(f"{PINS[role].filename} could not be fetched from PyPI: x")

    monkeypatch.setattr(foreignwheels, "fetch", offline)
    with pytest.raises(pytest.skip.Exception, match="could not be fetched from PyPI: x"):
        foreign_wheel("win-arm64")


def test_the_cache_folder_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RELFORGE_TEST_CACHE", str(tmp_path))
    assert foreignwheels.cache_dir() == tmp_path
    monkeypatch.delenv("RELFORGE_TEST_CACHE")
    assert foreignwheels.cache_dir() == Path.home() / ".cache" / "relforge" / "test-wheels"


def test_a_pin_must_agree_with_its_file_name() -> None:
    with pytest.raises(ValueError, match="no tag for cp313 on win_arm64"):
        ForeignWheel(
            role="win-arm64",
            project="demo",
            version="1.0",
            filename="demo-1.0-cp313-cp313-win_amd64.whl",
            sha256="0" * 64,
            platform="win_arm64",
            python_version="3.13",
            abi="cp313",
        )
