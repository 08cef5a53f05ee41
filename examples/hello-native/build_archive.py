"""Build hello-native's C++ library as a native archive (libtorch-style zip).

Reads what relforge gives an archive cell: RELFORGE_VERSION (stamped version, e.g.
1.0.0+cpu), RELFORGE_OUTPUT_DIR (where the one zip goes), RELFORGE_ARCHIVE_NAME (its name,
from the matrix's libtorch.file_name), LIBTORCH_VARIANT (shared-with-deps,
static-without-deps, …), LIBTORCH_CONFIG (release|debug), CXX11_ABI and CXX (default c++).
Writes

    $RELFORGE_ARCHIVE_NAME     e.g. hello-native-linux-x86_64-shared-with-deps-release-1.0.0+cpu.zip
      hello-native/include/hello_native/core.h
      hello-native/lib/libhello_native.so      (static variants: libhello_native.a)
      hello-native/build-version               the stamped version

with fixed timestamps, so the same sources give the same bytes.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = "hello-native"
EPOCH = (1980, 1, 1, 0, 0, 0)


def run(argv: list[str]) -> None:
    print("$ " + shlex.join(argv), flush=True)
    subprocess.run(argv, check=True)


def compile_library(work: Path, *, static: bool, debug: bool) -> Path:
    cxx = os.environ.get("CXX", "c++")
    abi = os.environ.get("CXX11_ABI", "1")
    flags = ["-std=c++17", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
    flags += ["-O0", "-g"] if debug else ["-O2"]
    obj = work / "core.o"
    run([cxx, *flags, "-c", str(HERE / "csrc" / "core.cpp"), "-o", str(obj)])
    if static:
        lib = work / "libhello_native.a"
        run([os.environ.get("AR", "ar"), "rcs", str(lib), str(obj)])
    else:
        lib = work / "libhello_native.so"
        run([cxx, "-shared", "-Wl,-soname,libhello_native.so", str(obj), "-o", str(lib)])
    return lib


def add(zf: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(f"{TOP}/{name}", date_time=EPOCH)
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def main() -> int:
    version = os.environ.get("RELFORGE_VERSION") or (HERE / "version.txt").read_text().strip()
    variant = os.environ.get("LIBTORCH_VARIANT", "shared-with-deps")
    debug = os.environ.get("LIBTORCH_CONFIG", "release") == "debug"
    out = Path(os.environ.get("RELFORGE_OUTPUT_DIR", "dist"))
    out.mkdir(parents=True, exist_ok=True)
    config = "debug" if debug else "release"
    name = os.environ.get("RELFORGE_ARCHIVE_NAME") or f"{TOP}-{variant}-{config}-{version}.zip"
    with tempfile.TemporaryDirectory() as tmp:
        lib = compile_library(Path(tmp), static=variant.startswith("static"), debug=debug)
        partial = out / f".{name}.partial"
        with zipfile.ZipFile(partial, "w") as zf:
            add(zf, "build-version", f"{version}\n".encode())
            add(zf, "include/hello_native/core.h", (HERE / "csrc" / "core.h").read_bytes())
            add(zf, f"lib/{lib.name}", lib.read_bytes(), 0o755)
        partial.replace(out / name)
    print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
