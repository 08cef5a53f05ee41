"""Build of numpy-abi against the numpy installed in the build environment.

Reads RELFORGE_VERSION (the stamped version; default version.txt).  The numpy it compiles
against is whatever `import numpy` finds: relforge installs the cell's axis value
(RELFORGE_AXIS_NUMPY) before the build, so each wheel records the numpy it was built with.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy
from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
VERSION = os.environ.get("RELFORGE_VERSION") or (HERE / "version.txt").read_text().strip()

setup(
    version=VERSION,
    ext_modules=[
        Extension(
            "numpy_abi._core",
            sources=["csrc/core.c"],
            include_dirs=[numpy.get_include()],
            define_macros=[("BUILT_WITH_NUMPY", f'"{numpy.__version__}"')],
        )
    ],
)
