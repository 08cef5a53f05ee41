"""Expansion of the shipped PyTorch matrix against the reference facts, and of the small matrix."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.matrix.cell import CELL_FIELDS
from relforge.matrix.expand import candidates, expand_cells
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from relforge.matrix.selector import parse_selector
from tests.conftest import EXAMPLE, PYTORCH, SMALL

LINUX_X86 = "platform_system == 'Linux' and platform_machine == 'x86_64'"
# torch 2.9.0's own METADATA (PyPI): its Linux CUDA wheels also require Triton, after the pins.
TRITON_29 = f"triton==3.5.0; {LINUX_X86}"

# The 2.9 pins exactly as the reference facts list them (the oracle; typed independently of
# matrix/pytorch.yaml).
REFERENCE_29 = {
    "cu126": """nvidia-cuda-nvrtc-cu12==12.6.77 nvidia-cuda-runtime-cu12==12.6.77
        nvidia-cuda-cupti-cu12==12.6.80 nvidia-cudnn-cu12==9.10.2.21 nvidia-cublas-cu12==12.6.4.1
        nvidia-cufft-cu12==11.3.0.4 nvidia-curand-cu12==10.3.7.77 nvidia-cusolver-cu12==11.7.1.2
        nvidia-cusparse-cu12==12.5.4.2 nvidia-cusparselt-cu12==0.7.1 nvidia-nccl-cu12==2.27.5
        nvidia-nvshmem-cu12==3.3.20 nvidia-nvtx-cu12==12.6.77 nvidia-nvjitlink-cu12==12.6.85
        nvidia-cufile-cu12==1.11.1.6""",
    "cu128": """nvidia-cuda-nvrtc-cu12==12.8.93 nvidia-cuda-runtime-cu12==12.8.90
        nvidia-cuda-cupti-cu12==12.8.90 nvidia-cudnn-cu12==9.10.2.21 nvidia-cublas-cu12==12.8.4.1
        nvidia-cufft-cu12==11.3.3.83 nvidia-curand-cu12==10.3.9.90 nvidia-cusolver-cu12==11.7.3.90
        nvidia-cusparse-cu12==12.5.8.93 nvidia-cusparselt-cu12==0.7.1 nvidia-nccl-cu12==2.27.5
        nvidia-nvshmem-cu12==3.3.20 nvidia-nvtx-cu12==12.8.90 nvidia-nvjitlink-cu12==12.8.93
        nvidia-cufile-cu12==1.13.1.3""",
    "cu130": """nvidia-cuda-nvrtc==13.0.48 nvidia-cuda-runtime==13.0.48 nvidia-cuda-cupti==13.0.48
        nvidia-cudnn-cu13==9.13.0.50 nvidia-cublas==13.0.0.19 nvidia-cufft==12.0.0.15
        nvidia-curand==10.4.0.35 nvidia-cusolver==12.0.3.29 nvidia-cusparse==12.6.2.49
        nvidia-cusparselt-cu13==0.8.0 nvidia-nccl-cu13==2.27.7 nvidia-nvshmem-cu13==3.3.24
        nvidia-nvtx==13.0.39 nvidia-nvjitlink==13.0.39 nvidia-cufile==1.15.0.42""",
}
REFERENCE_XPU_29 = [
    "intel-cmplr-lib-rt==2025.2.1",
    "intel-cmplr-lib-ur==2025.2.1",
    "intel-cmplr-lic-rt==2025.2.1",
    "intel-sycl-rt==2025.2.1",
    f"oneccl-devel==2021.16.1; {LINUX_X86}",
    f"oneccl==2021.16.1; {LINUX_X86}",
    f"impi-rt==2021.16.1; {LINUX_X86}",
    "onemkl-sycl-blas==2025.2.0",
    "onemkl-sycl-dft==2025.2.0",
    "onemkl-sycl-lapack==2025.2.0",
    "onemkl-sycl-rng==2025.2.0",
    "onemkl-sycl-sparse==2025.2.0",
    "dpcpp-cpp-rt==2025.2.1",
    "intel-opencl-rt==2025.2.1",
    "mkl==2025.2.0",
    "intel-openmp==2025.2.1",
    "tbb==2022.2.0",
    "tcmlib==1.4.0",
    "umf==0.11.0",
    "intel-pti==0.13.1",
]


@pytest.fixture(scope="module")
def pytorch() -> Matrix:
    return load_matrix(PYTORCH)


def test_29_linux_counts(pytorch: Matrix) -> None:
    cells = expand_cells(pytorch, "2.9", selectors=[parse_selector("os=linux")])
    counts = Counter((c.package_type, c.platform) for c in cells)
    assert counts == {
        ("wheel", "linux-x86_64"): 49,
        ("wheel", "linux-aarch64"): 28,
        ("wheel", "linux-s390x"): 7,
        ("archive", "linux-x86_64"): 6,
    }
    x86 = {c.variant for c in cells if c.platform == "linux-x86_64" and c.package_type == "wheel"}
    assert x86 == {"cpu", "cu126", "cu128", "cu130", "rocm6.3", "rocm6.4", "xpu"}
    arm = {c.variant for c in cells if c.platform == "linux-aarch64"}
    assert arm == {"cpu", "cu126", "cu128", "cu130"}
    pythons = {c.python for c in cells if c.package_type == "wheel"}
    assert pythons == {"3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t"}


def test_29_other_platforms(pytorch: Matrix) -> None:
    cells = expand_cells(pytorch, "2.9")
    windows = [c for c in cells if c.platform == "windows-x86_64" and c.package_type == "wheel"]
    assert len(windows) == 35
    assert {c.variant for c in windows} == {"cpu", "cu126", "cu128", "cu130", "xpu"}
    assert all(c.extra_install_requires == () for c in windows if c.accelerator == "cuda")
    assert all(c.bundles_libraries for c in windows if c.accelerator == "cuda")
    mac = [c for c in cells if c.platform == "macos-arm64" and c.package_type == "wheel"]
    assert len(mac) == 7 and {c.platform_tag for c in mac} == {"macosx_14_0_arm64"}
    arm_win = [c for c in cells if c.platform == "windows-arm64"]
    assert sorted(c.python for c in arm_win if c.python) == ["3.11", "3.12", "3.13"]


@pytest.mark.parametrize("variant", sorted(REFERENCE_29))
def test_29_cuda_wheels_carry_the_reference_pins(pytorch: Matrix, variant: str) -> None:
    expected = [f"{pin}; {LINUX_X86}" for pin in REFERENCE_29[variant].split()] + [TRITON_29]
    cells = [
        c
        for c in expand_cells(pytorch, "2.9")
        if c.variant == variant and c.os == "linux" and c.package_type == "wheel"
    ]
    assert len(cells) == 14  # x86_64 and aarch64 reuse the same list
    for cell in cells:
        assert list(cell.extra_install_requires) == expected
        assert cell.env["RELFORGE_EXTRA_INSTALL_REQUIRES"].splitlines() == expected


def test_29_xpu_pins(pytorch: Matrix) -> None:
    for cell in expand_cells(pytorch, "2.9", selectors=[parse_selector("variant=xpu")]):
        assert list(cell.extra_install_requires) == REFERENCE_XPU_29


def test_29_cuda_facts(pytorch: Matrix) -> None:
    cells = {
        c.variant: c
        for c in expand_cells(pytorch, "2.9")
        if c.platform == "linux-x86_64" and c.python == "3.12"
    }
    assert cells["cu126"].accelerator_full_version == "12.6.3"
    assert cells["cu128"].accelerator_full_version == "12.8.1"
    assert cells["cu130"].accelerator_full_version == "13.0.0"
    assert cells["cu130"].cudnn_version == "9.13.0.50"
    assert cells["cu130"].status == "experimental"
    assert cells["cu128"].cuda_arch_list == ("7.0", "7.5", "8.0", "8.6", "9.0", "10.0", "12.0")
    assert cells["cu128"].env["TORCH_CUDA_ARCH_LIST"] == "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
    assert cells["cu130"].env["NVCC_FLAGS"] == "-Xfatbin -compress-all -compress-mode=size"
    assert cells["cu128"].pypi_default and not cells["cu126"].pypi_default
    assert cells["cu128"].image == "pytorch/manylinux2_28-builder:cuda12.8"
    assert cells["rocm6.4"].image == "pytorch/manylinux2_28-builder:rocm6.4"
    arm = {
        c.variant: c
        for c in expand_cells(pytorch, "2.9")
        if c.platform == "linux-aarch64" and c.python == "3.12"
    }
    assert arm["cpu"].image == "pytorch/manylinux2_28_aarch64-builder:cpu-aarch64"
    assert arm["cu130"].image == "pytorch/manylinuxaarch64-builder:cuda13.0"
    assert arm["cu130"].env["GPU_ARCH_TYPE"] == "cuda-aarch64"


def test_29_libtorch(pytorch: Matrix) -> None:
    cells = expand_cells(
        pytorch, "2.9", selectors=[parse_selector("package_type=libtorch,os=linux")]
    )
    assert [c.id for c in cells] == [
        f"libtorch-linux-x86_64-{v}-shared-with-deps-release"
        for v in ("cpu", "cu126", "cu128", "cu130", "rocm6.3", "rocm6.4")
    ]
    assert cells[1].image == "pytorch/libtorch-cxx11-builder:cuda12.6"
    assert all(c.python is None and c.platform_tag is None for c in cells)
    offered = [
        c
        for c in candidates(pytorch, pytorch.releases["2.9"])
        if c.cell.package_type == "archive" and c.cell.os == "linux"
    ]
    assert len(offered) == 6 * 4  # every archive variant is offered, the rules keep one
    rocm_rule = [
        c
        for c in offered
        if c.cell.accelerator == "rocm" and c.cell.libtorch_variant == "static-without-deps"
    ]
    assert all(c.excluded_by and "ROCm" in c.excluded_by.reason for c in rocm_rule)


def test_26_manylinux_split(pytorch: Matrix) -> None:
    cells = {
        c.variant: c
        for c in expand_cells(pytorch, "2.6")
        if c.platform == "linux-x86_64" and c.python == "3.12"
    }
    for name in ("cpu", "cu118", "cu124", "rocm6.1"):
        assert (cells[name].platform_tag, cells[name].cxx11_abi) == ("manylinux2014_x86_64", False)
    for name in ("cpu-cxx11-abi", "cu126", "rocm6.2.4", "xpu"):
        assert (cells[name].platform_tag, cells[name].cxx11_abi) == ("manylinux_2_28_x86_64", True)
    assert cells["cpu-cxx11-abi"].local_version == "cpu.cxx11.abi"
    aarch = {c.variant for c in expand_cells(pytorch, "2.6") if c.platform == "linux-aarch64"}
    assert aarch == {"cpu", "cu126"}


def test_27_full_wheel(pytorch: Matrix) -> None:
    cells = expand_cells(pytorch, "2.7", channel="release")
    full = [c for c in cells if c.id.endswith("-full")]
    assert [c.id for c in full] == ["wheel-linux-x86_64-py3.11-cu126-full"]
    cell = full[0]
    assert cell.bundles_libraries and cell.extra_install_requires == ()
    assert cell.upload_subfolder == "cu126_full"
    assert cell.upload_prefix == "whl/cu126_full/"
    assert cell.extra_of == "wheel-linux-x86_64-py3.11-cu126"
    ids = [c.id for c in cells]
    assert ids.index(cell.id) == ids.index(cell.extra_of) + 1
    assert not [c for c in expand_cells(pytorch, "2.8") if c.id.endswith("-full")]


def test_28_aarch64_has_no_cuda_128(pytorch: Matrix) -> None:
    arm = {c.variant for c in expand_cells(pytorch, "2.8") if c.platform == "linux-aarch64"}
    assert arm == {"cpu", "cu129"}


def test_ids_are_unique_stable_and_ordered(pytorch: Matrix) -> None:
    for release in pytorch.releases:
        first = [c.id for c in expand_cells(pytorch, release)]
        again = [c.id for c in expand_cells(load_matrix(PYTORCH), release)]
        assert first == again
        assert len(set(first)) == len(first)
    cells = expand_cells(pytorch, "2.9")
    assert cells[0].id == "wheel-linux-x86_64-py3.10-cpu"
    assert cells[1].id == "wheel-linux-x86_64-py3.10-cu126"


def test_cell_json_has_the_contract_fields(pytorch: Matrix) -> None:
    cell = expand_cells(pytorch, "2.9")[0].to_json()
    assert list(cell) == list(CELL_FIELDS)
    for name in (
        "id",
        "package_type",
        "os",
        "arch",
        "python",
        "accelerator",
        "accelerator_version",
        "variant",
        "platform_tag",
        "cxx11_abi",
        "image",
        "extra_install_requires",
        "env",
    ):
        assert name in cell
    for name in (
        "DESIRED_PYTHON",
        "DESIRED_CUDA",
        "GPU_ARCH_TYPE",
        "GPU_ARCH_VERSION",
        "PACKAGE_TYPE",
    ):
        assert name in cell["env"]


def test_channels_stamp_versions(write: Callable[[str], Path]) -> None:
    matrix = load_matrix(write(SMALL))
    day = datetime.date(2025, 11, 3)
    nightly = expand_cells(matrix, "1.0", channel="nightly", date=day)
    assert nightly[0].version == "1.0.0.dev20251103+cpu"
    assert nightly[0].upload_prefix == "whl/nightly/cpu/"
    assert nightly[0].index_url == "https://example.org/whl/nightly/cpu"
    test = expand_cells(matrix, "1.0", channel="test")
    assert {c.version for c in test if c.variant == "cu128"} == {"1.0.0+cu128"}
    release = expand_cells(matrix, "1.0", channel="release")
    assert release[0].upload_prefix == "whl/cpu/"


def test_extends_merges_and_deletes(write: Callable[[str], Path]) -> None:
    assert "    include: []\n" in SMALL
    text = SMALL.replace(
        "    include: []\n", "    include: []\n    pypi_default:\n      windows-x86_64: null\n"
    )
    matrix = load_matrix(write(text))
    newer = matrix.releases["1.1"]
    assert [str(p) for p in newer.python] == ["3.12", "3.13", "3.13t", "3.14"]
    assert list(newer.accelerators) == ["cpu", "cu128", "cu130"]
    assert newer.accelerators["cu128"].cudnn is not None  # inherited
    assert newer.date == datetime.date(2025, 12, 1)
    assert newer.include == ()
    assert dict(newer.pypi_default) == {"linux-x86_64": "cu128"}
    assert newer.extends == "1.0"
    cells = expand_cells(matrix, "1.1")
    assert "wheel-windows-x86_64-py3.13t-cpu" not in {c.id for c in cells}  # inherited exclude


def test_example_matrix() -> None:
    matrix = load_matrix(EXAMPLE)
    cells = expand_cells(matrix, "1.0")
    assert len(cells) == 9
    (archive,) = [c for c in cells if c.package_type == "archive"]
    assert archive.id == "libtorch-linux-x86_64-cpu-shared-with-deps-release"
    assert archive.python is None and archive.libtorch_config == "release"
    cells = [c for c in cells if c.package_type == "wheel"]
    assert {c.python for c in cells} == {"3.10", "3.11", "3.12", "3.13"}
    assert {c.variant for c in cells} == {"cpu", "cu130"}
    assert matrix.publishing.store.startswith("file://")
