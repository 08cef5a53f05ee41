"""Build real wheels for validation tests: a C++ extension compiled with this machine's g++,
zipped with METADATA, WHEEL and RECORD like any build backend would, plus ways to break each."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sysconfig
import textwrap
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MODULE = "demo_ext"
PYTHON = sysconfig.get_python_version()  # the extension is built for the Python running tests
PYTHON_TAG = "cp" + PYTHON.replace(".", "")
PROJECT = "demo-ext"

# A CPython extension whose build_info() reports what it was built as, and one C++ function in
# namespace `demo` taking a std::string (its mangled name shows the string ABI).
EXTENSION = textwrap.dedent("""\
    #include <Python.h>
    #include <string>
    #ifdef NEEDS_THREADS
    #include <pthread.h>
    static void *run(void *) { return nullptr; }
    #endif
    #ifdef NEEDS_LIB
    extern "C" int stub_function(void);
    #endif

    // Only reads the string: creating or freeing one would pull in more of libstdc++ (the old
    // ABI's reference counting needs __libc_single_threaded@GLIBC_2.32 with GCC 12).
    namespace demo {
    __attribute__((visibility("default"))) std::size_t measure(const std::string &what) {
        return what.size();
    }
    }

    static PyObject *build_info(PyObject *, PyObject *) {
    #ifdef NEEDS_THREADS
        pthread_t t;
        pthread_create(&t, nullptr, run, nullptr);
        pthread_join(t, nullptr);
    #endif
    #ifdef NEEDS_LIB
        stub_function();
    #endif
        return Py_BuildValue("{s:s,s:O,s:s,s:s}", "variant", VARIANT,
                             "cxx11_abi", _GLIBCXX_USE_CXX11_ABI ? Py_True : Py_False,
                             "accelerator", ACCELERATOR, "python", PYTHON);
    }

    static PyMethodDef methods[] = {
        {"build_info", build_info, METH_NOARGS, "How this module was built."},
        {nullptr, nullptr, 0, nullptr}};
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", nullptr, -1, methods};
    PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
    """)


@dataclass(frozen=True, kw_only=True)
class Build:
    """How to compile the extension."""

    variant: str = "cpu"
    accelerator: str = "cpu"
    cxx11_abi: bool = True
    threads: bool = False  # calls pthread_create: needs GLIBC_2.34 on glibc >= 2.34
    rpath: str | None = None
    needs_library: str | None = None  # soname of a stub library to link against


def compile_extension(build: Build, workdir: Path) -> bytes:
    """The shared object's bytes."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "core.cpp"
    src.write_text(EXTENSION)
    out = workdir / "_core.so"
    argv = [
        "g++", "-shared", "-fPIC", "-O1", "-std=c++17",
        f"-I{sysconfig.get_paths()['include']}",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(build.cxx11_abi)}",
        f'-DVARIANT="{build.variant}"', f'-DACCELERATOR="{build.accelerator}"',
        f'-DPYTHON="{PYTHON}"',
        str(src), "-o", str(out),
    ]  # fmt: skip
    if build.threads:
        argv += ["-DNEEDS_THREADS", "-pthread"]
    if build.rpath:
        argv.append(f"-Wl,-rpath,{build.rpath}")
    if build.needs_library:
        stub = workdir / build.needs_library
        (workdir / "stub.c").write_text("int stub_function(void) { return 1; }\n")
        subprocess.run(
            ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{build.needs_library}",
             str(workdir / "stub.c"), "-o", str(stub)],
            check=True,
        )  # fmt: skip
        argv += ["-DNEEDS_LIB", str(stub)]
    subprocess.run(argv, check=True, capture_output=True)
    if build.accelerator == "cuda":  # a CUDA build carries device code (RF-V048)
        subprocess.run(
            ["objcopy", "--add-section", f".nv_fatbin={device_code(workdir)}",
             "--set-section-flags", ".nv_fatbin=alloc,readonly", str(out)],
            check=True, capture_output=True,
        )  # fmt: skip
    return out.read_bytes()


CUDA_HOME = "/usr/local/cuda-13.0"  # this machine's toolkit when nvcc is not on PATH
KERNEL = "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
DEVICE_ARCHES = ("80", "90")  # SASS the CUDA builds carry (their cells declare no arch_list)


def device_code(workdir: Path) -> Path:
    """A real fat binary (SASS sm_80, sm_90) made by nvcc, as a CUDA build's `.nv_fatbin`."""
    nvcc = shutil.which("nvcc") or str(Path(os.environ.get("CUDA_HOME", CUDA_HOME)) / "bin/nvcc")
    (workdir / "kernel.cu").write_text(KERNEL)
    fatbin = workdir / "kernel.fatbin"
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in DEVICE_ARCHES]
    subprocess.run(
        [nvcc, "-fatbin", *gencode, "-o", str(fatbin), str(workdir / "kernel.cu")],
        check=True,
        capture_output=True,
    )
    return fatbin


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@dataclass(kw_only=True)
class WheelSpec:
    version: str
    python_tag: str = PYTHON_TAG
    abi_tag: str = PYTHON_TAG
    platform_tag: str = "manylinux_2_28_x86_64"
    wheel_tags: Sequence[str] | None = None  # Tag lines of WHEEL (default: the file name's)
    requires_dist: Sequence[str] = ()
    requires_python: str | None = ">=3.11"
    name: str = PROJECT
    extension: bytes = b""
    extra_files: Mapping[str, bytes] = field(default_factory=dict)
    tamper_record: str | None = None  # member whose RECORD hash is replaced
    unlisted: Mapping[str, bytes] = field(default_factory=dict)  # added after RECORD

    @property
    def file_name(self) -> str:
        name = self.name.replace("-", "_")
        return f"{name}-{self.version}-{self.python_tag}-{self.abi_tag}-{self.platform_tag}.whl"


def write_wheel(spec: WheelSpec, directory: Path) -> Path:
    """Zip the wheel the way build backends do (deflated, RECORD last)."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{spec.name.replace('-', '_')}-{spec.version}.dist-info"
    tags = spec.wheel_tags or [
        f"{spec.python_tag}-{spec.abi_tag}-{p}" for p in spec.platform_tag.split(".")
    ]
    metadata = ["Metadata-Version: 2.1", f"Name: {spec.name}", f"Version: {spec.version}"]
    if spec.requires_python:
        metadata.append(f"Requires-Python: {spec.requires_python}")
    metadata += [f"Requires-Dist: {r}" for r in spec.requires_dist]
    metadata.append("Classifier: Programming Language :: Python :: 3")
    files: dict[str, bytes] = {
        f"{MODULE}/__init__.py": (
            f'from ._core import build_info\n__version__ = "{spec.version}"\n'
        ).encode(),
        f"{MODULE}/_core{sysconfig.get_config_var('EXT_SUFFIX')}": spec.extension,
        **spec.extra_files,
        f"{dist_info}/METADATA": ("\n".join(metadata) + "\n").encode(),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: relforge-tests\nRoot-Is-Purelib: false\n"
            + "".join(f"Tag: {t}\n" for t in tags)
        ).encode(),
    }
    rows = []
    for arcname, data in files.items():
        digest = record_hash(data)
        if arcname == spec.tamper_record:
            digest = record_hash(data + b"tampered")
        rows.append(f"{arcname},{digest},{len(data)}")
    rows.append(f"{dist_info}/RECORD,,")
    path = directory / spec.file_name
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            zf.writestr(arcname, data)
        for arcname, data in spec.unlisted.items():
            zf.writestr(arcname, data)
        zf.writestr(f"{dist_info}/RECORD", "\n".join(rows) + "\n")
    return path


def metadata_wheel(folder: Path, dist: str, version: str) -> Path:
    """A minimal pure-Python wheel (metadata only, empty RECORD), as pip reads one."""
    info = f"{dist}-{version}.dist-info"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
        )
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


def serve_index(
    root: Path, project: str, wheels: Sequence[Path], *, with_hash: bool = True
) -> None:
    """Lay out a PEP 503 index under root/simple/<project>/ linking each wheel (with #sha256=)."""
    page_dir = root / "simple" / project
    page_dir.mkdir(parents=True, exist_ok=True)
    files = root / "files"
    files.mkdir(exist_ok=True)
    links = []
    for wheel in wheels:
        data = wheel.read_bytes()
        (files / wheel.name).write_bytes(data)
        fragment = f"#sha256={hashlib.sha256(data).hexdigest()}" if with_hash else ""
        href = "../../files/" + wheel.name.replace("+", "%2B") + fragment
        links.append(f'<a href="{href}">{wheel.name}</a><br>')
    (page_dir / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
    )
    (root / "simple" / "index.html").write_text(
        f'<!DOCTYPE html><html><body><a href="{project}/">{project}</a></body></html>\n'
    )
