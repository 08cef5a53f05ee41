"""The entries of a variant's `arch_list`: CUDA `X.Y`, `9.0a`, `10.0f`, `12.0+PTX` (the forms
nvcc's `-gencode` and PyTorch's TORCH_CUDA_ARCH_LIST use) and ROCm gfx target IDs."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CUDA = re.compile(r"(\d+)\.(\d+)([af]?)(\+PTX)?\Z")
_GFX = re.compile(r"gfx[0-9a-f]+(:(sramecc|xnack)[+-])*\Z")


@dataclass(frozen=True)
class CudaArch:
    """One CUDA entry: SASS `sm_XY<suffix>`, and PTX `compute_XY<suffix>` when `ptx`."""

    major: int
    minor: int
    suffix: str  # "", "a" (arch-specific), "f" (family-specific)
    ptx: bool

    @property
    def sass(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"

    @property
    def compute(self) -> str:
        return f"compute_{self.major}{self.minor}{self.suffix}"


def parse_cuda_arch(entry: str) -> CudaArch | None:
    """`9.0a+PTX` → CudaArch(9, 0, "a", True); None when it is not a CUDA arch entry."""
    match = _CUDA.match(entry.strip())
    if match is None:
        return None
    major, minor, suffix, ptx = match.groups()
    return CudaArch(int(major), int(minor), suffix, bool(ptx))


def is_gfx_target(entry: str) -> bool:
    """Whether `entry` is a ROCm target ID: `gfx90a`, `gfx942:sramecc+:xnack-`."""
    return _GFX.match(entry.strip()) is not None
