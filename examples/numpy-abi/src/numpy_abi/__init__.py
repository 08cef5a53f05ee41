"""numpy-abi: one C function on numpy's C API, built per numpy ABI by relforge."""

from importlib.metadata import version

from numpy_abi._core import built_with, total

__version__ = version("numpy-abi")
__all__ = ["__version__", "built_with", "total"]
