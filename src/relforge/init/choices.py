"""The starter's decisions that depend on the machine: the CUDA variant (from the nvcc found
here), the builder images (PyTorch's for a PyTorch extension, a plain manylinux one for the CPU
cells of any other project, PyTorch's manylinux CUDA image for CUDA cells: it has the nvcc) and
the dependency axes (torch pinned to the torch pip can install here, numpy 2.x).  Each decision
comes with the note `relforge init` prints; a note starting with `!` asks for a look."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relforge.init.machine import HostPlatform, LocalWheels, Nvcc
from relforge.init.startermatrix import AxisChoice, CudaChoice

# Without an nvcc here, the CUDA variant the starter writes (the last one PyTorch builds with
# CUDA 12, for the GPUs of the last years).
DEFAULT_CUDA = CudaChoice(
    variant="cu128",
    version="12.8.1",
    arch_list=("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"),
    image="",
    why="no nvcc on this machine: CUDA 12.8 assumed",
)
# Without a torch wheel here: the torch series the axis is written for.
DEFAULT_TORCH = "2.9"
NUMPY_AXIS = AxisChoice(
    dependency="numpy",
    value="2.x",
    install=("numpy>=2,<3",),
    requires=("numpy>=2,<3",),
    why="numpy 2's C API: the wheel runs with numpy 2.x",
)


@dataclass(frozen=True, kw_only=True)
class Choices:
    cpu_image: str
    cuda: CudaChoice | None
    axes: tuple[AxisChoice, ...]
    pythons: tuple[str, ...]  # the Pythons the axes' wheels serve (empty: no limit)
    notes: tuple[str, ...]


def choose(
    *,
    platform: HostPlatform,
    cuda_found_in: Sequence[str],
    nvcc: Nvcc | None,
    compiled_against: Sequence[str],
    compiled_against_from: str,
    torch: LocalWheels | None,
) -> Choices:
    notes: list[str] = []
    is_torch = "torch" in compiled_against
    if is_torch:
        cpu_image = "pytorch/manylinux2_28-builder:cpu"
    else:
        cpu_image = f"quay.io/pypa/manylinux_2_28_{platform.arch}"
    cuda: CudaChoice | None = None
    if cuda_found_in:
        cuda = _cuda(nvcc, is_torch)
        notes.append(
            f"CUDA variant {cuda.variant} (CUDA {cuda.version}, arch_list "
            f"{', '.join(cuda.arch_list)}): the sources have CUDA code "
            f"({', '.join(cuda_found_in)}); {cuda.why}"
        )
    else:
        notes.append(
            "CPU only: no CUDA code in the sources (*.cu, *.cuh, CUDAExtension, CMake CUDA); "
            "docs/cuda-extension.md shows how to add a CUDA variant"
        )
    notes.append(
        f"builder image {cpu_image}: "
        + (
            "PyTorch's, for a PyTorch extension (torch in the build)"
            if is_torch
            else "a plain manylinux image (not a PyTorch extension)"
        )
    )
    axes: list[AxisChoice] = []
    pythons: tuple[str, ...] = ()
    if is_torch:
        axis, pythons, note = _torch_axis(torch)
        axes.append(axis)
        notes.append(f"torch axis {axis.value} (torch in {compiled_against_from}): {note}")
        if cuda is not None:
            notes.append(
                f"! the torch axis installs {axis.install[0]} for every variant: the "
                f"{cuda.variant} cells need a CUDA build of torch (give the axis value "
                f'`index: "https://download.pytorch.org/whl/{{variant}}"` and a pin without '
                "+cpu)"
            )
    if "numpy" in compiled_against:
        axes.append(NUMPY_AXIS)
        notes.append(
            f"numpy axis 2.x (numpy in {compiled_against_from}): built and run with numpy 2"
        )
    return Choices(
        cpu_image=cpu_image, cuda=cuda, axes=tuple(axes), pythons=pythons, notes=tuple(notes)
    )


def _cuda(nvcc: Nvcc | None, is_torch: bool) -> CudaChoice:
    if nvcc is None:
        major_minor = DEFAULT_CUDA.version.rsplit(".", 1)[0]
        base = DEFAULT_CUDA
    else:
        major_minor = f"{nvcc.major}.{nvcc.minor}"
        base = CudaChoice(
            variant=nvcc.variant,
            version=nvcc.version,
            arch_list=nvcc.arch_list,
            image="",
            why=f"from {nvcc.path} (`nvcc --version`; arch_list from `nvcc --list-gpu-arch`)",
        )
    # A CUDA cell needs nvcc in its image: PyTorch's manylinux_2_28 CUDA builder images are the
    # public manylinux images that carry the toolkit, whatever the project builds with it.
    image = f"pytorch/manylinux2_28-builder:cuda{major_minor}"
    why = base.why
    if not is_torch:
        why += (
            f"; its cells build in {image}, a manylinux_2_28 image with CUDA {major_minor} "
            "(any image with that nvcc and your Pythons will do: `relforge builder-image --cuda`)"
        )
    return CudaChoice(
        variant=base.variant,
        version=base.version,
        arch_list=base.arch_list,
        image=image,
        why=why,
    )


def _torch_axis(torch: LocalWheels | None) -> tuple[AxisChoice, tuple[str, ...], str]:
    if torch is None:
        series = DEFAULT_TORCH
        install = f"torch=={series}.*"
        pythons: tuple[str, ...] = ()
        note = f"! no torch wheel in pip's find-links folders: torch {series} from pip's index"
    else:
        major, minor = torch.version.release[:2]
        series = f"{major}.{minor}"
        install = f"torch=={torch.version}"
        pythons = torch.pythons
        note = (
            f"torch {torch.version} from {torch.folder} (wheels for Python "
            f"{', '.join(torch.pythons) or 'any'})"
        )
    major, minor = (int(p) for p in series.split("."))
    axis = AxisChoice(
        dependency="torch",
        value=series,
        install=(install,),
        requires=(f"torch>={series},<{major}.{minor + 1}",),
        why="the torch the extension compiles against; its C++ ABI ties the wheel to it",
    )
    return axis, pythons, note
