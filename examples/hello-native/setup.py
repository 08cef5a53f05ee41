"""Build of hello-native, driven by the environment relforge gives every cell.

Reads: RELFORGE_VERSION (stamped version; default version.txt), DESIRED_CUDA (variant name),
GPU_ARCH_TYPE (cpu|cuda), CXX11_ABI (0|1), CUDA_ARCH_LIST ("8.0;9.0;12.0+PTX"), NVCC_FLAGS,
MAX_JOBS and CUDA_HOME.  A CUDA cell compiles csrc/kernel.cu with nvcc and links the CUDA
runtime statically, so the wheel needs no CUDA library at install time.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
VERSION = os.environ.get("RELFORGE_VERSION") or (HERE / "version.txt").read_text().strip()
VARIANT = os.environ.get("DESIRED_CUDA", "cpu")
WITH_CUDA = os.environ.get("GPU_ARCH_TYPE", "cpu") == "cuda"
CXX11_ABI = os.environ.get("CXX11_ABI", "1")
CUDA_HOME = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


def gencode_flags(arch_list: str) -> list[str]:
    """`7.5;9.0+PTX` → SASS for each arch, plus PTX for those marked +PTX."""
    flags = []
    for item in filter(None, (a.strip() for a in arch_list.split(";"))):
        arch = item.removesuffix("+PTX").replace(".", "")
        flags += ["-gencode", f"arch=compute_{arch},code=sm_{arch}"]
        if item.endswith("+PTX"):
            flags += ["-gencode", f"arch=compute_{arch},code=compute_{arch}"]
    return flags


class BuildExt(build_ext):
    def build_extensions(self) -> None:
        if WITH_CUDA:
            self._compile_cuda(self.extensions[0])
        super().build_extensions()

    def _compile_cuda(self, ext: Extension) -> None:
        obj = Path(self.build_temp) / "kernel.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            str(CUDA_HOME / "bin" / "nvcc"),
            "-c",
            str(HERE / "csrc" / "kernel.cu"),
            "-o",
            str(obj),
            "-O2",
            "-std=c++17",
            "-Xcompiler",
            "-fPIC",
            f"-D_GLIBCXX_USE_CXX11_ABI={CXX11_ABI}",
            "--threads",
            os.environ.get("MAX_JOBS", "1"),
            *gencode_flags(os.environ.get("CUDA_ARCH_LIST", "")),
            *shlex.split(os.environ.get("NVCC_FLAGS", "")),
        ]
        print(" ".join(argv), flush=True)
        subprocess.run(argv, check=True)
        ext.extra_objects.append(str(obj))
        ext.library_dirs.append(str(CUDA_HOME / "lib64"))
        ext.libraries += ["cudart_static", "dl", "rt", "pthread"]
        ext.define_macros.append(("HELLO_WITH_CUDA", "1"))


core = Extension(
    "hello_native._core",
    sources=["csrc/core.cpp", "csrc/module.cpp"],
    include_dirs=["csrc"],
    define_macros=[
        ("HELLO_VARIANT", f'"{VARIANT}"'),
        ("HELLO_VERSION", f'"{VERSION}"'),
        ("_GLIBCXX_USE_CXX11_ABI", CXX11_ABI),
    ],
    extra_compile_args=["-std=c++17", "-O2"],
    language="c++",
)

setup(version=VERSION, ext_modules=[core], cmdclass={"build_ext": BuildExt})
