"""The C extension, built against CPython's limited API of 3.9 (PEP 384): one cp39-abi3 wheel
imports on 3.9, 3.10, … alike.  setup.cfg names the wheel's tag (py_limited_api = cp39)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fastcrc._crc",
            sources=["src/fastcrc/_crc.c"],
            define_macros=[("Py_LIMITED_API", "0x03090000")],
            py_limited_api=True,
        )
    ],
)
