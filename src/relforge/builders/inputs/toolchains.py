"""The accelerator toolchain a host build of a cell needs: nvcc of the cell's CUDA version,
hipcc for ROCm, icpx for XPU.  A missing one makes the cell `skipped`, not a crash."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version
from typing_extensions import assert_never

from relforge.matrix.cell import Cell


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    label: str  # for the cache key and the log: "nvcc 13.0.88 (/usr/local/cuda)"
    env: dict[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = ()  # folders to put first on PATH


@dataclass(frozen=True)
class MissingToolchain:
    why: str


def find_toolchain(cell: Cell) -> Toolchain | MissingToolchain:
    match cell.accelerator:
        case "cpu":
            return Toolchain(label="")
        case "cuda":
            return _cuda(cell.accelerator_version or "")
        case "rocm":
            hipcc = shutil.which("hipcc") or _existing("/opt/rocm/bin/hipcc")
            if hipcc is None:
                return MissingToolchain(
                    f"no ROCm toolchain (hipcc) for ROCm {cell.accelerator_version}"
                )
            return Toolchain(label=f"hipcc ({hipcc})", path=(str(Path(hipcc).parent),))
        case "xpu":
            icpx = shutil.which("icpx")
            if icpx is None:
                return MissingToolchain("no oneAPI DPC++ compiler (icpx) for XPU")
            return Toolchain(label=f"icpx ({icpx})")
        case _:
            assert_never(cell.accelerator)


def _existing(path: str) -> str | None:
    return path if Path(path).exists() else None


def _cuda(short: str) -> Toolchain | MissingToolchain:
    try:
        wanted = Version(short).release[:2]
    except InvalidVersion:
        return MissingToolchain(f"the cell names no CUDA version ({short!r})")
    homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")]
    homes += [f"/usr/local/cuda-{short}", "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        homes.append(str(Path(nvcc).resolve().parent.parent))
    seen = []
    for home in dict.fromkeys(h for h in homes if h):
        version = nvcc_version(str(Path(home) / "bin" / "nvcc"))
        if version is None:
            continue
        seen.append(f"{version} in {home}")
        if version.release[:2] == wanted:
            return Toolchain(
                label=f"nvcc {version} ({home})",
                env={"CUDA_HOME": home, "CUDA_PATH": home},
                path=(str(Path(home) / "bin"),),
            )
    found = f" (found CUDA {', '.join(seen)})" if seen else ""
    return MissingToolchain(f"no nvcc for CUDA {short}{found}")


@functools.cache
def nvcc_version(nvcc: str) -> Version | None:
    """`Cuda compilation tools, release 13.0, V13.0.88` → 13.0.88."""
    if not Path(nvcc).is_file():
        return None
    try:
        done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        for token in line.replace(",", " ").split():
            if token.startswith("V"):
                try:
                    return Version(token[1:])
                except InvalidVersion:
                    continue
    return None
