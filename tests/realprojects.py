"""Small copies of six kinds of public native projects, written for relforge's tests in the
layout and style of well-known examples (the facts carried over, not their code):

- `torch_muladd`: a PyTorch C++ extension (torch.utils.cpp_extension, like pytorch/extension-cpp
  before its limited-API switch): torch in [build-system].requires and install_requires, the
  version in setup.py;
- `skbuild_adder`: scikit-build-core + pybind11 + CMake (like pybind/scikit_build_example),
  `cmake_minimum_required(VERSION 3.27…)`, so the backend asks for a newer cmake than a Debian
  12 machine has (a PEP 517 dynamic build requirement); `__version__` from a CMake macro;
- `pybind_adder`: setuptools + pybind11's Pybind11Extension (like pybind/python_example), the
  version in setup.py and in a C++ macro;
- `numpy_norm`: a C extension on numpy's C API with setuptools-scm versions (no git in the
  build's source copy: relforge's pretend-version knob must reach it);
- `cyfib`: a Cython module, Cython in [build-system].requires, the version from setuptools'
  `attr:` (like many Cython projects on PyPI);
- `limitedsum`: a Limited-API C extension (`py_limited_api=True`, setup.cfg's `[bdist_wheel]
  py_limited_api = cp310`): one cp310-abi3 wheel per platform.

`write_project(kind, folder)` writes one into `folder/<name>`; tests/adoption.py walks it from
`relforge init` to installed with no matrix edit (checking what init read: the Python range,
the axes, the platform tag).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TORCH_WHEEL_VERSION = "2.13.0+cpu"  # the local CPU wheel of this machine (/opt/wheels)


def _dedent(files: dict[str, str]) -> dict[str, str]:
    return {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}


TORCH_MULADD = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64", "torch"]
        build-backend = "setuptools.build_meta"
    """,
        "setup.py": """
        from setuptools import find_packages, setup
        from torch.utils.cpp_extension import BuildExtension, CppExtension

        setup(
            name="torch_muladd",
            version="0.4.0",
            packages=find_packages(),
            ext_modules=[
                CppExtension(
                    "torch_muladd._C",
                    ["torch_muladd/csrc/muladd.cpp"],
                    # the test builds it twice (host, container): the least compiling
                    # that proves the build (-O0, no debug info: 5 CPU-s, not 20)
                    extra_compile_args={"cxx": ["-O0", "-g0"]},
                )
            ],
            install_requires=["torch"],
            python_requires=">=3.10",
            cmdclass={"build_ext": BuildExtension},
        )
    """,
        "torch_muladd/__init__.py": """
        from importlib.metadata import version

        import torch  # loads libtorch and libc10, which the extension needs, first

        from torch_muladd._C import muladd

        __version__ = version("torch_muladd")
        __all__ = ["muladd"]
    """,
        "torch_muladd/csrc/muladd.cpp": """
        // the narrowest headers that do: the Tensor class and its methods, and pybind11 with
        // torch's tensor casters (<ATen/ATen.h> + <torch/python.h>, which brings the C++
        // frontend, cost four times the compiling)
        #include <ATen/core/Tensor.h>
        #include <torch/csrc/utils/pybind.h>

        // a * b + c, elementwise, on CPU tensors of one shape
        at::Tensor muladd(const at::Tensor& a, const at::Tensor& b, double c) {
          TORCH_CHECK(a.sizes() == b.sizes(), "a and b differ in shape");
          return a.mul(b).add(c);
        }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("muladd", &muladd, "a * b + c");
        }
    """,
    }
)

SKBUILD_ADDER = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["scikit-build-core>=0.11", "pybind11>=2.13"]
        build-backend = "scikit_build_core.build"

        [project]
        name = "skbuild-adder"
        version = "0.2.0"
        requires-python = ">=3.10"

        [tool.scikit-build]
        minimum-version = "build-system.requires"
    """,
        "CMakeLists.txt": """
        cmake_minimum_required(VERSION 3.27...4.0)
        project(${SKBUILD_PROJECT_NAME} VERSION ${SKBUILD_PROJECT_VERSION} LANGUAGES CXX)
        find_package(pybind11 CONFIG REQUIRED)
        pybind11_add_module(_core MODULE src/adder.cpp)
        target_compile_definitions(_core PRIVATE VERSION_INFO=${PROJECT_VERSION})
        install(TARGETS _core DESTINATION skbuild_adder)
    """,
        "src/adder.cpp": """
        #include <pybind11/pybind11.h>

        #define TEXT(x) #x
        #define MACRO_TEXT(x) TEXT(x)

        PYBIND11_MODULE(_core, m) {
          m.def("add", [](long a, long b) { return a + b; });
          m.attr("__version__") = MACRO_TEXT(VERSION_INFO);
        }
    """,
        "src/skbuild_adder/__init__.py": """
        from ._core import __version__, add

        __all__ = ["__version__", "add"]
    """,
    }
)

PYBIND_ADDER = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=42", "pybind11>=2.10.0"]
        build-backend = "setuptools.build_meta"
    """,
        "setup.py": """
        from pybind11.setup_helpers import Pybind11Extension, build_ext
        from setuptools import setup

        __version__ = "0.3.0"

        setup(
            name="pybind_adder",
            version=__version__,
            ext_modules=[
                Pybind11Extension(
                    "pybind_adder",
                    ["src/main.cpp"],
                    define_macros=[("VERSION_INFO", __version__)],
                )
            ],
            cmdclass={"build_ext": build_ext},
            python_requires=">=3.9",
        )
    """,
        "src/main.cpp": """
        #include <pybind11/pybind11.h>

        #define TEXT(x) #x
        #define MACRO_TEXT(x) TEXT(x)

        int add(int i, int j) { return i + j; }

        PYBIND11_MODULE(pybind_adder, m) {
          m.def("add", &add, "i + j");
          m.def("subtract", [](int i, int j) { return i - j; });
          m.attr("__version__") = MACRO_TEXT(VERSION_INFO);
        }
    """,
    }
)

NUMPY_NORM = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64", "setuptools-scm>=8", "numpy>=2"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "numpy-norm"
        dynamic = ["version"]
        requires-python = ">=3.10"
        dependencies = ["numpy>=1.25"]

        [tool.setuptools.packages.find]
        where = ["src"]

        [tool.setuptools_scm]
        version_file = "src/numpy_norm/_version.py"
    """,
        "setup.py": """
        import numpy
        from setuptools import Extension, setup

        setup(
            ext_modules=[
                Extension(
                    "numpy_norm._norm",
                    ["src/numpy_norm/_norm.c"],
                    include_dirs=[numpy.get_include()],
                )
            ]
        )
    """,
        ".gitignore": "src/numpy_norm/_version.py\n",
        "src/numpy_norm/__init__.py": """
        from ._norm import norm2
        from ._version import version as __version__

        __all__ = ["__version__", "norm2"]
    """,
        "src/numpy_norm/_norm.c": """
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>
        #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
        #include <numpy/arrayobject.h>
        #include <math.h>

        /* The Euclidean norm of anything numpy can read as a 1-d array of doubles. */
        static PyObject *norm2(PyObject *self, PyObject *arg) {
            PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(
                arg, NPY_DOUBLE, 1, 1, NPY_ARRAY_IN_ARRAY);
            if (a == NULL) return NULL;
            const double *x = (const double *)PyArray_DATA(a);
            double sum = 0.0;
            for (npy_intp i = 0; i < PyArray_DIM(a, 0); i++) sum += x[i] * x[i];
            Py_DECREF(a);
            return PyFloat_FromDouble(sqrt(sum));
        }

        static PyMethodDef methods[] = {
            {"norm2", norm2, METH_O, "Euclidean norm of a 1-d array"},
            {NULL, NULL, 0, NULL},
        };

        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_norm", NULL, -1, methods};

        PyMODINIT_FUNC PyInit__norm(void) {
            import_array();
            return PyModule_Create(&module);
        }
    """,
    }
)


VERSIONEER_EXT = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64", "versioneer[toml]>=0.28"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "vsn-ext"
        dynamic = ["version"]
        requires-python = ">=3.10"

        [tool.versioneer]
        VCS = "git"
        style = "pep440"
        versionfile_source = "src/vsn_ext/_version.py"
        versionfile_build = "vsn_ext/_version.py"
        tag_prefix = "v"
        parentdir_prefix = "vsn-ext-"
    """,
        "setup.py": """
        import versioneer
        from setuptools import Extension, setup

        setup(
            version=versioneer.get_version(),
            cmdclass=versioneer.get_cmdclass(),
            package_dir={"": "src"},
            packages=["vsn_ext"],
            ext_modules=[Extension("vsn_ext._twice", ["src/vsn_ext/_twice.c"])],
        )
    """,
        # what `versioneer install --no-vendor` leaves for a checkout; the build writes the
        # version it computed over it
        "src/vsn_ext/_version.py": """
        def get_versions():
            return {"version": "0+unknown", "full-revisionid": None, "dirty": None,
                    "error": "not built", "date": None}
    """,
        "src/vsn_ext/__init__.py": """
        from ._twice import twice
        from ._version import get_versions

        __version__ = get_versions()["version"]
        __all__ = ["__version__", "twice"]
    """,
        "src/vsn_ext/_twice.c": """
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>

        static PyObject *twice(PyObject *self, PyObject *arg) {
            long n = PyLong_AsLong(arg);
            if (n == -1 && PyErr_Occurred()) return NULL;
            return PyLong_FromLong(2 * n);
        }

        static PyMethodDef methods[] = {{"twice", twice, METH_O, "2 * n"}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_twice", NULL, -1, methods};

        PyMODINIT_FUNC PyInit__twice(void) { return PyModule_Create(&module); }
    """,
    }
)


CYTHON_FIB = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64", "Cython>=3"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "cyfib"
        dynamic = ["version"]
        requires-python = ">=3.10"

        [tool.setuptools]
        packages = ["cyfib"]

        [tool.setuptools.dynamic]
        version = {attr = "cyfib.__version__"}
    """,
        "setup.py": """
        from Cython.Build import cythonize
        from setuptools import setup

        setup(ext_modules=cythonize(["cyfib/_fib.pyx"], language_level=3))
    """,
        "cyfib/__init__.py": """
        from cyfib._fib import fib

        __version__ = "0.5.0"
        __all__ = ["fib"]
    """,
        "cyfib/_fib.pyx": """
        def fib(int n):
            cdef long a = 0, b = 1
            for _ in range(n):
                a, b = b, a + b
            return a
    """,
    }
)

LIMITED_SUM = _dedent(
    {
        "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "limitedsum"
        version = "0.6.0"
        requires-python = ">=3.10"
    """,
        "setup.cfg": """
        [bdist_wheel]
        py_limited_api = cp310
    """,
        "setup.py": """
        from setuptools import Extension, setup

        setup(
            packages=["limitedsum"],
            ext_modules=[
                Extension(
                    "limitedsum._sum",
                    ["src/sum.c"],
                    py_limited_api=True,
                    define_macros=[("Py_LIMITED_API", "0x030A0000")],
                )
            ],
        )
    """,
        "limitedsum/__init__.py": """
        from limitedsum._sum import total

        __all__ = ["total"]
    """,
        "src/sum.c": """
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>

        /* The sum of an iterable of ints, with the stable ABI of 3.10 only. */
        static PyObject *total(PyObject *self, PyObject *arg) {
            PyObject *it = PyObject_GetIter(arg), *item;
            long sum = 0;
            if (it == NULL) return NULL;
            while ((item = PyIter_Next(it)) != NULL) {
                sum += PyLong_AsLong(item);
                Py_DECREF(item);
            }
            Py_DECREF(it);
            if (PyErr_Occurred()) return NULL;
            return PyLong_FromLong(sum);
        }

        static PyMethodDef methods[] = {{"total", total, METH_O, "sum"}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sum", NULL, -1, methods};
        PyMODINIT_FUNC PyInit__sum(void) { return PyModule_Create(&module); }
    """,
    }
)


@dataclass(frozen=True, kw_only=True)
class Kind:
    """One kind of project: its files, how to call it, and what the matrix needs."""

    name: str  # distribution and folder name (what `relforge init` reads)
    files: dict[str, str]
    probe: str  # Python that prints one line proving the extension works
    expected: str  # that line
    axes: dict[str, Any] = field(default_factory=dict)  # the axis `relforge init` writes
    requires_python: str | None = None  # what init writes (pyproject's, setup.py's)
    version_attribute: str = "pass"  # RF-R005 on its wheel: pass, or warn (unstamped code)
    select: str = "python=3.11,accelerator=cpu"  # the cell walked (the local torch wheel's Python)


KINDS = {
    "torch": Kind(
        name="torch_muladd",
        files=TORCH_MULADD,
        probe=(
            "import torch, torch_muladd as m; "
            "print(m.muladd(torch.ones(3), torch.full((3,), 2.0), 1.5).tolist())"
        ),
        expected="[3.5, 3.5, 3.5]",
        requires_python=">=3.10",
        axes={
            "torch": {
                "2.13": {
                    "install": [f"torch=={TORCH_WHEEL_VERSION}"],
                    "requires": ["torch>=2.13,<2.14"],
                }
            }
        },
    ),
    "skbuild": Kind(
        name="skbuild-adder",
        files=SKBUILD_ADDER,
        probe="import skbuild_adder as m; print(m.add(2, 40))",
        expected="42",
        requires_python=">=3.10",
        version_attribute="warn",  # VERSION_INFO is the project's own 0.2.0
    ),
    "pybind": Kind(
        name="pybind_adder",
        files=PYBIND_ADDER,
        probe="import pybind_adder as m; print(m.add(40, 2), m.subtract(44, 2))",
        expected="42 42",
        requires_python=">=3.9",
        version_attribute="warn",  # VERSION_INFO is the project's own 0.3.0
    ),
    "numpy": Kind(
        name="numpy-norm",
        files=NUMPY_NORM,
        probe="import numpy_norm as m; print(m.norm2([3.0, 4.0]))",
        expected="5.0",
        requires_python=">=3.10",
        axes={"numpy": {"2.x": {"install": ["numpy>=2,<3"], "requires": ["numpy>=2,<3"]}}},
    ),
    "cython": Kind(
        name="cyfib",
        files=CYTHON_FIB,
        probe="import cyfib; print(cyfib.fib(10))",
        expected="55",
        requires_python=">=3.10",
        version_attribute="warn",  # a literal __version__ = "0.5.0" in the package
    ),
    "limited": Kind(
        name="limitedsum",
        files=LIMITED_SUM,
        probe="import limitedsum; print(limitedsum.total([40, 2]))",
        expected="42",
        requires_python=">=3.10",
        version_attribute="skip",  # no __version__ at all
        select="accelerator=cpu",  # the one cp310-abi3 cell
    ),
}


VERSIONEER = Kind(  # versioneer's knob: the version from the source folder's name
    name="vsn-ext",
    files=VERSIONEER_EXT,
    probe="import vsn_ext as m; print(m.twice(21))",
    expected="42",
    requires_python=">=3.10",
)


def write_project(kind: Kind, folder: Path) -> Path:
    """The project's files in `folder/<name>`; returns that folder."""
    root = folder / kind.name
    for name, text in kind.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
