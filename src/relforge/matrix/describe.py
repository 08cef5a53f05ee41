"""Human names for matrix parts, shared by explain, diff, docs and lint."""

from __future__ import annotations

from relforge.errors import ConfigError
from relforge.matrix.schema import Matrix, Release, Variant
from relforge.matrix.values import PythonVersion


def variant_label(name: str, variant: Variant) -> str:
    """`CUDA 12.8`, `ROCm 6.4`, `XPU`, `CPU`, or `CPU (cpu-cxx11-abi)` for named extras."""
    match variant.kind:
        case "cuda":
            base = f"CUDA {variant.short_version}"
            conventional = f"cu{variant.short_version.replace('.', '')}"
        case "rocm":
            base = f"ROCm {variant.version}"
            conventional = f"rocm{variant.version}"
        case "xpu":
            base, conventional = "XPU", "xpu"
        case "cpu":
            base, conventional = "CPU", "cpu"
    return base if name == conventional else f"{base} ({name})"


def python_label(python: PythonVersion) -> str:
    return f"{python} (free-threaded)" if python.free_threaded else str(python)


def join_words(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def python_range(release: Release) -> str:
    """RELEASE.md style: `>=3.10, <=3.14, (3.13t, 3.14t)`."""
    plain = sorted(p.version for p in release.python if not p.free_threaded)
    threaded = [str(p) for p in release.python if p.free_threaded]
    text = f">={plain[0]}, <={plain[-1]}" if plain else ""
    if threaded:
        text += f"{', ' if text else ''}({', '.join(threaded)})"
    return text


def newest_release(matrix: Matrix) -> str:
    """The release with the highest version (X.Y, or its `version:`), for commands whose
    `--release` may be left out."""
    if not matrix.releases:
        raise ConfigError(f"{matrix.file} has no releases", key="releases")
    return max(matrix.releases, key=lambda name: matrix.releases[name].full_version)
