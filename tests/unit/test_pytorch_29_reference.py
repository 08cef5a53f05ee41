"""matrix/pytorch.yaml's 2.9 expansion against PyTorch's own generator, cell for cell.

The oracle below is data typed from the public generator on the release/2.9 line
(.github/scripts/generate_binary_build_matrix.py: CUDA 12.6/12.8/13.0, ROCm 6.3/6.4, Python
3.10–3.14t; generate_ci_workflows.py: which OS gets which arches, Python versions, libtorch
configs and variants) and from the torch 2.9.0 files on PyPI (triton).  It is not derived from
relforge's code or from the matrix file: a change to either that drifts from PyTorch fails here.
"""

from __future__ import annotations

from collections import Counter

import pytest

from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import PYTORCH

ALL_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t")
CUDA = ("12.6", "12.8", "13.0")
ROCM = ("6.3", "6.4")


def _cu(version: str) -> str:
    return "cu" + version.replace(".", "")


# generate_wheels_matrix(os) per OS of generate_ci_workflows.py: our platform name, the Python
# versions, and desired_cuda → (gpu_arch_type, builder image).  The generator names images
# without the registry ("manylinux2_28-builder:cuda12.6") except s390x's; the workflows pull
# them from docker.io/pytorch, the prefix written here.  Windows and macOS build on the runner.
WHEELS: dict[str, tuple[str, tuple[str, ...], dict[str, tuple[str, str]]]] = {
    "linux": (
        "linux-x86_64",
        ALL_PYTHONS,
        {
            "cpu": ("cpu", "pytorch/manylinux2_28-builder:cpu"),
            **{_cu(v): ("cuda", f"pytorch/manylinux2_28-builder:cuda{v}") for v in CUDA},
            **{f"rocm{v}": ("rocm", f"pytorch/manylinux2_28-builder:rocm{v}") for v in ROCM},
            "xpu": ("xpu", "pytorch/manylinux2_28-builder:xpu"),
        },
    ),
    "linux-aarch64": (
        "linux-aarch64",
        ALL_PYTHONS,
        {
            "cpu": ("cpu-aarch64", "pytorch/manylinux2_28_aarch64-builder:cpu-aarch64"),
            **{_cu(v): ("cuda-aarch64", f"pytorch/manylinuxaarch64-builder:cuda{v}") for v in CUDA},
        },
    ),
    "linux-s390x": (
        "linux-s390x",
        ALL_PYTHONS,
        {"cpu": ("cpu-s390x", "pytorch/manylinuxs390x-builder:cpu-s390x")},
    ),
    "windows": (
        "windows-x86_64",
        ALL_PYTHONS,
        {"cpu": ("cpu", ""), **{_cu(v): ("cuda", "") for v in CUDA}, "xpu": ("xpu", "")},
    ),
    "windows-arm64": ("windows-arm64", ("3.11", "3.12", "3.13"), {"cpu": ("cpu", "")}),
    "macos-arm64": ("macos-arm64", ALL_PYTHONS, {"cpu": ("cpu", "")}),
}

# generate_libtorch_matrix(os, config, libtorch_variants=["shared-with-deps"]) as the workflows
# call it: (our platform, config) → desired_cuda → builder image ("" on Windows and macOS).
LIBTORCH: dict[tuple[str, str], dict[str, str]] = {
    ("linux-x86_64", "release"): {
        "cpu": "pytorch/libtorch-cxx11-builder:cpu",
        **{_cu(v): f"pytorch/libtorch-cxx11-builder:cuda{v}" for v in CUDA},
        **{f"rocm{v}": f"pytorch/libtorch-cxx11-builder:rocm{v}" for v in ROCM},
    },
    **{
        ("windows-x86_64", config): {"cpu": "", **{_cu(v): "" for v in CUDA}}
        for config in ("release", "debug")
    },
    **{("windows-arm64", config): {"cpu": ""} for config in ("release", "debug")},
    ("macos-arm64", "release"): {"cpu": ""},
}

# The torch 2.9.0 wheels' own METADATA: every Linux CUDA wheel also requires Triton.
TRITON = "triton==3.5.0; platform_system == 'Linux' and platform_machine == 'x86_64'"


@pytest.fixture(scope="module")
def cells() -> list[Cell]:
    return expand_cells(load_matrix(PYTORCH), "2.9")


def wheel_row(cell: Cell) -> tuple[str, str, str, str, str]:
    return (
        cell.platform,
        cell.python or "",
        cell.variant,
        cell.env["GPU_ARCH_TYPE"],
        cell.image or "",
    )


def test_every_wheel_cell_is_the_generators(cells: list[Cell]) -> None:
    expected = {
        (platform, python, desired, arch_type, image)
        for platform, pythons, arches in WHEELS.values()
        for python in pythons
        for desired, (arch_type, image) in arches.items()
    }
    wheels = [c for c in cells if c.package_type == "wheel"]
    got = [wheel_row(c) for c in wheels]
    assert len(got) == len(set(got))  # no cell twice
    assert set(got) - expected == set(), "cells the generator does not make"
    assert expected - set(got) == set(), "cells of the generator the matrix lacks"
    counts = Counter(c.platform for c in wheels)
    assert counts == {
        "linux-x86_64": 49,
        "linux-aarch64": 28,
        "linux-s390x": 7,
        "windows-x86_64": 35,
        "windows-arm64": 3,
        "macos-arm64": 7,
    }


def test_s390x_wheels(cells: list[Cell]) -> None:
    s390x = [c for c in cells if c.platform == "linux-s390x"]
    assert [c.id for c in s390x] == [f"wheel-linux-s390x-py{p}-cpu" for p in ALL_PYTHONS]
    for cell in s390x:
        assert (cell.os, cell.arch, cell.accelerator) == ("linux", "s390x", "cpu")
        assert cell.platform_tag == "manylinux_2_28_s390x" and cell.cxx11_abi
        assert cell.env["DESIRED_CUDA"] == "cpu" and cell.extra_install_requires == ()


def test_every_archive_cell_is_the_generators(cells: list[Cell]) -> None:
    expected = {
        (platform, config, desired, image)
        for (platform, config), arches in LIBTORCH.items()
        for desired, image in arches.items()
    }
    archives = [c for c in cells if c.package_type == "archive"]
    got = [(c.platform, c.libtorch_config, c.variant, c.image or "") for c in archives]
    assert len(got) == len(set(got)) == 17
    assert set(got) == expected
    assert {c.libtorch_variant for c in archives} == {"shared-with-deps"}
    for cell in archives:
        assert cell.id == (
            f"libtorch-{cell.platform}-{cell.variant}-shared-with-deps-{cell.libtorch_config}"
        )
        assert cell.env["LIBTORCH_CONFIG"] == cell.libtorch_config
        assert cell.python is None and cell.extra_install_requires == ()
        # The C++11 ABI is a libstdc++ matter: on for Linux archives, off for MSVC and libc++.
        assert cell.cxx11_abi == (cell.os == "linux")


def test_triton_is_required_once_by_every_linux_cuda_wheel_and_no_other(
    cells: list[Cell],
) -> None:
    for cell in cells:
        wants = cell.package_type == "wheel" and cell.os == "linux" and cell.accelerator == "cuda"
        has = [r for r in cell.extra_install_requires if r.startswith("triton")]
        assert has == ([TRITON] if wants else []), cell.id
        if wants:
            assert cell.extra_install_requires[-1] == TRITON  # after the variant's own pins
            assert cell.env["RELFORGE_EXTRA_INSTALL_REQUIRES"].splitlines()[-1] == TRITON
        assert not any("pytorch-triton" in r for r in cell.extra_install_requires)
