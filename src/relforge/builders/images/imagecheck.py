"""Prove a multi-Python builder image works: one container (no network) runs every
/opt/python/*/bin/python, imports what a build needs (venv, ssl, ctypes, zlib, bz2, lzma,
sqlite3, hashlib, pip, setuptools), runs `ldd` over the interpreter, libpython and every
extension module (with the prefix's lib/ as LD_LIBRARY_PATH: libpython3.so finds libpython by
the interpreter's RUNPATH), and asks each CUDA toolkit's nvcc for its version.

A missing import or a wrong version fails the image; a library that only an optional extension
module needs (tkinter's libtk, curses' libpanelw…) is a warning naming module and library.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relforge.builders.images.imageroot import CudaToolkit
    from relforge.builders.images.pythons import HostPython

NEEDED_MODULES = (
    "sys",
    "venv",
    "ssl",
    "ctypes",
    "zlib",
    "bz2",
    "lzma",
    "sqlite3",
    "hashlib",
    "setuptools",  # before pip: pip's import of distutils would defeat setuptools' shim
    "pip",
)
_PROBE = (
    f"import sysconfig, platform, {', '.join(NEEDED_MODULES)}; "
    "print(platform.python_version() + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') "
    "else ''))"
)
_SCRIPT = r"""
for py in /opt/python/*/bin/python; do
    [ -e "$py" ] || continue
    tag=$(basename "$(dirname "$(dirname "$py")")")
    if out=$("$py" -I -c "$PROBE" 2>/tmp/probe.err); then
        echo "ok $tag $out"
    else
        echo "fail $tag $(tail -n 1 /tmp/probe.err)"
    fi
    real=$(readlink -f "$py")
    home=$(dirname "$(dirname "$real")")
    case "$home" in /usr) continue ;; esac
    for f in "$real" "$home"/lib/libpython*.so* "$home"/lib/python3*/lib-dynload/*.so; do
        [ -f "$f" ] || continue
        LD_LIBRARY_PATH="$home/lib" ldd "$f" 2>/dev/null | while read -r lib arrow rest; do
            [ "$arrow $rest" = "=> not found" ] && echo "missing $tag ${f#"$home"/} $lib"
        done
    done
done
for nvcc in /usr/local/cuda-*/bin/nvcc; do
    [ -x "$nvcc" ] || continue
    echo "cuda $nvcc $("$nvcc" --version 2>&1 | tr '\n' ' ')"
done
"""


@dataclass(frozen=True, kw_only=True)
class ImageCheck:
    versions: dict[str, str]  # cp312-cp312 → 3.12.1 (as the interpreter in the image says)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # optional modules with missing libraries
    cuda: dict[str, str] = field(default_factory=dict)  # 13.0 → nvcc's version line

    @property
    def ok(self) -> bool:
        return not self.failures


def check_image(
    client: Any, image: str, pythons: Sequence[HostPython], cuda: Sequence[CudaToolkit]
) -> ImageCheck:
    """Run the check script in a container of `image` and compare with what was copied."""
    import docker.errors

    container = client.containers.create(
        image,
        command=["/bin/sh", "-c", _SCRIPT],
        environment={"PROBE": _PROBE},
        network_mode="none",
        working_dir="/",
    )
    try:
        container.start()
        status = container.wait(timeout=300)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
    if int(status.get("StatusCode", 1)) != 0:
        return ImageCheck(versions={}, failures=[f"the check script failed:\n{output[-2000:]}"])
    return parse_check(output, pythons, cuda)


def parse_check(
    output: str, pythons: Sequence[HostPython], cuda: Sequence[CudaToolkit]
) -> ImageCheck:
    versions: dict[str, str] = {}
    failures: list[str] = []
    missing: dict[tuple[str, str], list[str]] = {}
    found_cuda: dict[str, str] = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        tag, _, detail = rest.partition(" ")
        match kind:
            case "ok":
                versions[tag] = detail.strip()
            case "fail":
                failures.append(f"{tag} does not run in the image: {detail.strip()}")
            case "missing":
                file, _, lib = detail.partition(" ")
                missing.setdefault((tag, lib), []).append(file)
            case "cuda":
                found_cuda[tag] = detail.strip()
    for python in pythons:
        want = python.version + ("t" if python.free_threaded else "")
        got = versions.get(python.tag)
        if got is None and python.system and not any(f.startswith(python.tag) for f in failures):
            failures.append(
                f"{python.tag}: the host's {python.executable} is a system interpreter, which "
                f"cannot be copied, and the image's /usr has no Python {python.wanted} (install "
                f"{python.wanted} with pyenv or uv)"
            )
        elif got is None and not any(f.startswith(python.tag) for f in failures):
            failures.append(f"{python.tag} is not in the image")
        elif got is not None and got != want:
            failures.append(f"{python.tag} runs Python {got}, not the host's {want}")
    optional: dict[str, dict[str, set[str]]] = {}  # module → library → tags
    for (tag, lib), files in sorted(missing.items()):
        core = [f for f in files if "lib-dynload" not in f]
        if core:  # the interpreter or libpython itself: it would not have run at all
            failures.append(f"{tag}: {', '.join(core)} needs {lib}, which the image lacks")
            continue
        for file in files:
            module = file.rsplit("/", 1)[-1].split(".")[0]
            optional.setdefault(module, {}).setdefault(lib, set()).add(tag)
    warnings = [
        f"{module} cannot load in {', '.join(sorted(set().union(*libs.values())))}: "
        f"{', '.join(sorted(libs))} not in the image"
        for module, libs in sorted(optional.items())
    ]
    for toolkit in cuda:
        path = f"/usr/local/cuda-{toolkit.version}/bin/nvcc"
        line = found_cuda.get(path, "")
        if f"release {toolkit.version}," not in line:
            failures.append(f"nvcc of CUDA {toolkit.version} does not run in the image: {line}")
    return ImageCheck(versions=versions, failures=failures, warnings=warnings, cuda=found_cuda)
