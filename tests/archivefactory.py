"""Native archives (libtorch-style zips) for validation tests: shared libraries compiled with
this machine's gcc/g++, zipped like `zip -r` does, the first bytes of PE and Mach-O files, ways to
make a zip lie about itself, and the `relforge validate` calls and report readers the tests use."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import stat
import subprocess
import textwrap
import threading
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.binfactory import plain_macho, plain_pe
from tests.conftest import Result

Run = Callable[..., Result]

PROJECT = "demo-lib"
VERSION = "1.0.0+cpu"
CELL = "libtorch-linux-x86_64-cpu-shared-with-deps-release"
NAME = f"{PROJECT}-linux-x86_64-shared-with-deps-release-{VERSION}.zip"
MATRIX = """\
schema_version: 1
project:
  name: demo-lib
  size_limit_mb: 1
releases:
  "1.0":
    python: ["3.11"]
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cpu:
        kind: cpu
        platforms: {linux-x86_64: {}}
    libtorch:
      platforms: [linux-x86_64]
      accelerators: [cpu]
      variants: [shared-with-deps]
"""
ARCHIVES = ("--select", "package_type=libtorch")

# A C helper library and a C++ library using it; `demo::measure` takes a std::string, so its
# mangled name shows the string ABI.  Only reads the string (see tests/wheelfactory.py).
HELPER = "int helper_value(void) { return 41; }\n"
LIBRARY = textwrap.dedent("""\
    #include <string>
    #ifdef NEEDS_THREADS
    #include <pthread.h>
    static void *run(void *) { return nullptr; }
    #endif
    extern "C" int helper_value(void);
    #ifdef NEEDS_MISSING
    extern "C" int function_of_another_build(void);
    #define helper_value function_of_another_build
    #endif
    namespace demo {
    __attribute__((visibility("default"))) std::size_t measure(const std::string &what) {
    #ifdef NEEDS_THREADS
        pthread_t t;
        pthread_create(&t, nullptr, run, nullptr);
        pthread_join(t, nullptr);
    #endif
        return what.size() + helper_value();
    }
    }
    """)


@dataclass(frozen=True, kw_only=True)
class Lib:
    """How to compile libdemo.so."""

    cxx11_abi: bool = True
    runpath: str | None = "$ORIGIN"
    threads: bool = False  # pthread_create: GLIBC_2.34 on glibc >= 2.34, above manylinux_2_28
    undefined: bool = False  # calls a function no library defines (links: -shared allows it)


@dataclass(frozen=True, kw_only=True)
class Built:
    helper: bytes
    demo: bytes


Compile = Callable[[Lib], Built]


def compiler(root: Path) -> Compile:
    """Compile libhelper.so now, and libdemo.so once per distinct build when asked."""
    (root / "helper.c").write_text(HELPER)
    (root / "demo.cpp").write_text(LIBRARY)
    helper = root / "libhelper.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libhelper.so", str(root / "helper.c"),
         "-o", str(helper)],
        check=True, capture_output=True,
    )  # fmt: skip
    cache: dict[Lib, Built] = {}

    def get(lib: Lib) -> Built:
        if lib not in cache:
            out = root / f"libdemo{len(cache)}.so"
            argv = [
                "g++", "-shared", "-fPIC", "-O1", "-std=c++17", "-Wl,--enable-new-dtags",
                f"-D_GLIBCXX_USE_CXX11_ABI={int(lib.cxx11_abi)}", str(root / "demo.cpp"),
                "-o", str(out), f"-L{root}", "-lhelper",
            ]  # fmt: skip
            if lib.runpath is not None:
                argv.append(f"-Wl,-rpath,{lib.runpath}")
            if lib.threads:
                argv += ["-DNEEDS_THREADS", "-pthread"]
            if lib.undefined:
                argv.append("-DNEEDS_MISSING")
            subprocess.run(argv, check=True, capture_output=True)
            cache[lib] = Built(helper=helper.read_bytes(), demo=out.read_bytes())
        return cache[lib]

    return get


def good_files(built: Built, top: str = "libtorch") -> dict[str, bytes]:
    return {
        f"{top}/build-version": f"{VERSION}\n".encode(),
        f"{top}/include/demo/demo.h": b"#include <string>\nnamespace demo {\n"
        b"std::size_t measure(const std::string &what);\n}\n",
        f"{top}/lib/libdemo.so": built.demo,
        f"{top}/lib/libhelper.so": built.helper,
        f"{top}/share/cmake/demo/demoConfig.cmake": b"# cmake config\n",
    }


def write_archive(
    directory: Path,
    files: Mapping[str, bytes],
    *,
    symlinks: Mapping[str, str] | None = None,
    twice: Sequence[tuple[str, bytes]] = (),
    name: str = NAME,
) -> Path:
    """Zip the files deflated, directory entries first, as `zip -r` does."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    dirs = sorted(
        {"/".join(n.split("/")[:i]) + "/" for n in files for i in range(1, n.count("/") + 1)}
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for d in dirs:
            if not d.startswith(("/", "..")) and "/../" not in d:
                zf.writestr(d, b"")
        for arcname, data in files.items():
            zf.writestr(arcname, data)
        for arcname, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(arcname)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": that is the point
            for arcname, data in twice:
                zf.writestr(arcname, data)
    return path


def machine(elf: bytes, e_machine: int) -> bytes:
    """The ELF with another e_machine (183: aarch64) in its header."""
    return elf[:18] + e_machine.to_bytes(2, "little") + elf[20:]


def declare_size(path: Path, member: str, size: int) -> None:
    """Make the zip's local and central headers of `member` declare `size` uncompressed bytes."""
    data = bytearray(path.read_bytes())
    encoded = member.encode()
    patched = 0
    for signature, name_at, size_at in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
        at = data.find(signature)
        while at != -1:
            if data[at + name_at : at + name_at + len(encoded)] == encoded:
                data[at + size_at : at + size_at + 4] = size.to_bytes(4, "little")
                patched += 1
            at = data.find(signature, at + 1)
    assert patched == 2, f"{member}: {patched} headers patched"
    path.write_bytes(bytes(data))


def files_with(compiled: Compile, lib: Lib = Lib(), **changes: bytes | None) -> dict[str, bytes]:
    """The good files with some replaced (`lib__libdemo_so` → libtorch/lib/libdemo.so)."""
    files = good_files(compiled(lib))
    for key, value in changes.items():
        name = "libtorch/" + key.replace("__", "/").replace("_so", ".so").replace("_", "-")
        if value is None:
            files.pop(name)
        else:
            files[name] = value
    return files


def patch_local_name(path: Path, member: str, name: str) -> None:
    """Give the member's local file header another name of the same length."""
    assert len(name) == len(member)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        at = zf.getinfo(member).header_offset
    assert data[at + 30 : at + 30 + len(member)] == member.encode()
    data[at + 30 : at + 30 + len(member)] = name.encode()
    path.write_bytes(bytes(data))


def pe(machine: int, header_at: int = 0x80) -> bytes:
    """A DLL for `machine` (COFF Machine), its PE header at `header_at`, importing KERNEL32."""
    return plain_pe(machine, header_at)


def macho(*cpus: int) -> bytes:
    """A signed macOS 11.0 library: thin for one CPU, universal for more."""
    return plain_macho(*cpus)


X86_64, ARM64 = 0x01000007, 0x0100000C


WINDOWS_MATRIX = """\
schema_version: 1
project:
  name: demo-lib
  size_limit_mb: 1
releases:
  "1.0":
    python: ["3.11"]
    platforms:
      windows-x86_64: {os: windows, arch: x86_64, platform_tag: win_amd64}
    accelerators:
      cpu:
        kind: cpu
        platforms: {windows-x86_64: {}}
    libtorch:
      platforms: [windows-x86_64]
      accelerators: [cpu]
      variants: [shared-with-deps]
      configs: [release, debug]
"""


MACOS_MATRIX = (
    WINDOWS_MATRIX.replace(
        "windows-x86_64: {os: windows, arch: x86_64, platform_tag: win_amd64}",
        "macos-arm64: {os: macos, arch: arm64, platform_tag: macosx_14_0_arm64}",
    )
    .replace("windows-x86_64", "macos-arm64")
    .replace("configs: [release, debug]", "configs: [release]")
)


def validate_json(run: Run, matrix: Path, *args: str) -> tuple[int, dict[str, object]]:
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", *ARCHIVES, *args,
                 "--format", "json")  # fmt: skip
    return result.code, json.loads(result.out)


def verdicts(report: dict[str, object], subject: str = CELL) -> dict[str, dict[str, str]]:
    """check id → verdict of one subject."""
    artifacts = report["artifacts"]
    assert isinstance(artifacts, list)
    [found] = [a for a in artifacts if a["subject"] == subject]
    return {v["check"]: v for v in found["verdicts"]}


def failing(report: dict[str, object], subject: str = CELL) -> set[str]:
    return {c for c, v in verdicts(report, subject).items() if v["status"] == "fail"}


@contextlib.contextmanager
def serving(root: Path) -> Iterator[str]:
    """A static HTTP server on 127.0.0.1 for `root`; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
