"""a * b + c in C++, on torch tensors."""

from importlib.metadata import version

import torch  # loads libtorch and libc10 first: the extension links them, torch ships them

from torch_muladd._C import muladd

__version__ = version("torch-muladd")  # the version relforge stamped into the wheel


def build_info() -> dict[str, object]:
    """What `relforge validate --runtime` compares with the cell (RF-R003)."""
    return {
        "variant": "cpu",
        "torch": torch.__version__,
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
    }


__all__ = ["__version__", "build_info", "muladd"]
