"""hello-native: a small C++ extension (with a CUDA kernel in CUDA builds) built by relforge."""

from hello_native._core import build_info, device_count, dot, gpu_check, greet

__all__ = ["build_info", "device_count", "dot", "gpu_check", "greet"]
