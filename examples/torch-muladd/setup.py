"""The extension module, compiled by torch's own build_ext against the torch installed in the
build environment (relforge installs the cell's axis value, RELFORGE_AXIS_TORCH)."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    ext_modules=[
        CppExtension("torch_muladd._C", ["csrc/muladd.cpp"], extra_compile_args=["-O2"])
    ],
    cmdclass={"build_ext": BuildExtension},
)
