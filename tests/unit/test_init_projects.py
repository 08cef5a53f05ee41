"""`relforge init` on small replicas of the common kinds of native projects: what it reads
(version from every common source, requires-python from setup.py/setup.cfg, abi3, torch/numpy
in the build, the CUDA of the nvcc found, the import name), what it writes, the notes it
prints (`!` for what needs a look), and that the matrix passes `matrix lint --strict`.  Real
files, real git; nothing here needs a network."""

from __future__ import annotations

import datetime
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

from relforge.builders.version import stamp_version, version_base
from relforge.init import Starter, StarterRequest, plan_starter, read_project
from relforge.init.machine import HostPlatform, LocalWheels, Nvcc, find_nvcc, local_wheels
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.versiontags import pad_release, tag_version
from tests.conftest import Run
from tests.realprojects import KINDS, NUMPY_NORM, PYBIND_ADDER, TORCH_MULADD

DAY = datetime.date(2026, 11, 23)
HOST = HostPlatform(arch="x86_64", glibc=(2, 36), from_host=True)
NVCC_13 = Nvcc(
    path="/usr/local/cuda-13.0/bin/nvcc",
    version="13.0.88",
    major=13,
    minor=0,
    arch_list=("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"),
)
TORCH_CPU = LocalWheels(
    name="torch", version=Version("2.13.0+cpu"), pythons=("3.11",), folder="/opt/wheels"
)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _commit_and_tag(root: Path, *tags: str) -> None:
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--allow-empty", "-m", "first")
    for tag in tags:
        _git(root, "tag", tag)


def _plan(
    root: Path, *, nvcc: Nvcc | None = None, torch: LocalWheels | None = None
) -> tuple[Starter, dict[str, Any], list[str]]:
    """plan_starter for the project in `root` (the current directory) on a fixed machine:
    every Python available, no nvcc and no torch wheel unless given."""
    request = StarterRequest(facts=read_project(Path()), path=Path("matrix/m.yaml"), root=Path(),
                             today=DAY, host=HOST, available=lambda p: True, nvcc=nvcc,
                             torch=torch)  # fmt: skip
    starter = plan_starter(request)
    data: dict[str, Any] = yaml.safe_load(starter.text)
    return starter, data, list(starter.notes)


def _init_and_lint(run: Run, root: Path) -> tuple[str, Path]:
    """`relforge init` here, then `matrix check` and `matrix lint --strict` on what it wrote."""
    done = run("init")
    assert done.code == 0, done.err
    [matrix] = (root / "matrix").glob("*.yaml")
    relative = matrix.relative_to(root).as_posix()
    assert run("matrix", "check", relative).code == 0
    lint = run("matrix", "lint", "--strict", relative)
    assert lint.code == 0, lint.out + lint.err
    return done.out, matrix


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_setuptools_pybind11_version_and_python_from_setup_py(here: Path, run: Run) -> None:
    _write(here, PYBIND_ADDER)  # no version.txt: the version is in setup.py
    _starter, data, notes = _plan(here)
    [release] = data["releases"]
    assert release == "0.3" and "version" not in data["releases"][release]
    assert "release 0.3 from setup.py (0.3.0)" in notes
    assert data["releases"]["0.3"]["requires_python"] == ">=3.9"
    assert "requires_python >=3.9 from setup.py" in notes
    assert data["project"]["name"] == "pybind_adder"  # setup.py's name=
    assert "name pybind_adder from setup.py" in notes
    assert "import_name" not in data["project"]  # pybind_adder is the name's own
    assert "axes" not in data["releases"]["0.3"] and "abi3" not in data["releases"]["0.3"]
    image = data["releases"]["0.3"]["accelerators"]["cpu"]["platforms"]["linux-x86_64"]["image"]
    assert image == "quay.io/pypa/manylinux_2_28_x86_64"  # never PyTorch's for this project
    out, _ = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "0.3.0\n"
    assert "wrote version.txt: 0.3.0 (from setup.py)" in out


def test_scikit_build_core_nanobind_py_api_is_abi3(here: Path, run: Run) -> None:
    _write(here, {
        "pyproject.toml": """
            [build-system]
            requires = ["scikit-build-core>=0.10", "nanobind>=2"]
            build-backend = "scikit_build_core.build"

            [project]
            name = "nano-add"
            version = "0.5"
            requires-python = ">=3.11"

            [tool.scikit-build]
            wheel.py-api = "cp312"
            wheel.packages = ["src/nanoadd"]
        """,
        "CMakeLists.txt": "project(nano LANGUAGES CXX)\n",
        "src/nanoadd/__init__.py": "",
    })  # fmt: skip
    starter, data, notes = _plan(here)
    release = data["releases"]["0.5"]
    assert release["abi3"] == "3.12"
    assert "abi3 3.12 from [tool.scikit-build] wheel.py-api = cp312: one cp312-abi3 wheel" in notes
    assert data["project"]["import_name"] == "nanoadd"  # not nano_add, the name's default
    assert "import_name nanoadd from [tool.scikit-build] wheel.packages" in notes
    matrix = load_matrix("matrix/m.yaml", text=starter.text)
    ids = {c.id for c in expand_cells(matrix, "0.5")}
    assert "wheel-linux-x86_64-cp312-abi3-cpu" in ids and "wheel-linux-x86_64-py3.11-cpu" in ids
    assert not any("py3.13" in i for i in ids)  # 3.13 is served by the abi3 wheel
    _out, _ = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "0.5.0\n"  # X.Y written as X.Y.0


def test_numpy_extension_with_setuptools_scm_takes_the_next_release_after_the_tag(
    here: Path, run: Run
) -> None:
    _write(here, NUMPY_NORM)
    _commit_and_tag(here, "v0.1.3", "not-a-version")
    _starter, data, notes = _plan(here)
    assert (
        "release 0.1 from git tag v0.1.3 (setuptools-scm; the next release after it) (0.1.4)"
        in (notes)
    )
    release = data["releases"]["0.1"]
    assert release["version"] == "0.1.4"
    assert release["axes"] == KINDS["numpy"].axes  # what the README's edit for this kind was
    assert not any(n.startswith("!") for n in notes), notes
    assert "import_name" not in data["project"]
    _out, _ = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "0.1.4\n"


def test_pytorch_cuda_extension_gets_a_torch_axis_pytorch_images_and_the_nvcc_cuda(
    here: Path, run: Run
) -> None:
    files = dict(TORCH_MULADD)
    files["setup.py"] = files["setup.py"].replace("CppExtension", "CUDAExtension")
    _write(here, files)
    starter, data, notes = _plan(here, nvcc=NVCC_13, torch=TORCH_CPU)
    release = data["releases"]["0.4"]
    assert release["axes"] == KINDS["torch"].axes  # the README's torch axis, from the machine
    assert release["python"] == ["3.11"]  # the torch wheel here is for CPython 3.11 only
    assert any("the torch wheel here is for Python 3.11 only" in n for n in notes)
    assert release["requires_python"] == ">=3.10"
    cu130 = release["accelerators"]["cu130"]
    assert cu130["version"] == "13.0.88" and cu130["arch_list"][-1] == "12.0+PTX"
    assert "cu128" not in starter.text
    assert cu130["platforms"]["linux-x86_64"]["image"] == "pytorch/manylinux2_28-builder:cuda13.0"
    cpu = release["accelerators"]["cpu"]["platforms"]["linux-x86_64"]["image"]
    assert cpu == "pytorch/manylinux2_28-builder:cpu"
    assert any(n.startswith("! the torch axis installs torch==2.13.0+cpu") for n in notes)
    out, _matrix = _init_and_lint(run, here)  # this machine's nvcc and torch wheels
    assert "CUDA variant" in out


def test_without_nvcc_the_cuda_variant_is_the_default_and_says_so(here: Path) -> None:
    _write(here, {"k.cu": "__global__ void k() {}\n"})
    _, data, notes = _plan(here, nvcc=None)
    assert "cu128" in data["releases"]["0.1"]["accelerators"]
    assert any("no nvcc on this machine: CUDA 12.8 assumed" in n for n in notes)


def test_without_a_torch_wheel_the_axis_says_so(here: Path) -> None:
    _write(here, {"pyproject.toml": '[build-system]\nrequires = ["torch>=2"]\n'})
    _, data, notes = _plan(here, torch=None)
    axis = data["releases"]["0.1"]["axes"]["torch"]
    assert list(axis) == ["2.9"] and axis["2.9"]["install"] == ["torch==2.9.*"]
    assert any(n.startswith("torch axis 2.9") and "! no torch wheel" in n for n in notes)


def test_cython_module_version_from_a_setuptools_attr_read_without_importing(
    here: Path, run: Run
) -> None:
    _write(here, {
        "pyproject.toml": """
            [build-system]
            requires = ["setuptools>=64", "Cython>=3"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "cy-fast"
            dynamic = ["version"]
            requires-python = ">=3.10"

            [tool.setuptools]
            packages = ["cyfast"]

            [tool.setuptools.dynamic]
            version = {attr = "cyfast.__version__"}
        """,
        # importing it would fail: the attr must be read, never imported
        "cyfast/__init__.py": 'import not_installed_anywhere\n__version__ = "2.1"\n',
        "cyfast/_fast.pyx": "def twice(n): return 2 * n\n",
    })  # fmt: skip
    _, data, notes = _plan(here)
    assert any(n.startswith("release 2.1 from cyfast/__init__.py") for n in notes), notes
    assert data["project"]["import_name"] == "cyfast"
    assert "axes" not in data["releases"]["2.1"]  # Cython is no ABI the wheel depends on
    _out, _ = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "2.1.0\n"


@pytest.mark.parametrize(
    ("files", "version"),
    [
        ({"setup.cfg": "[metadata]\nversion = attr: pkg.__version__\n",
          "src/pkg/__init__.py": "__version__: str = '3.4.5'\n"}, "3.4.5"),
        ({"setup.cfg": "[metadata]\nversion = file: VERSION\n", "VERSION": "0.7\n"}, "0.7.0"),
        ({"setup.cfg": "[metadata]\nversion = 1.9.1\n"}, "1.9.1"),
        ({"setup.py": "from setuptools import setup\n__version__ = '4.2'\nsetup(name='x')\n"},
         "4.2.0"),
        ({"pyproject.toml": '[project]\nname = "x"\ndynamic = ["version"]\n'
          '[tool.setuptools.dynamic]\nversion = {file = ["VERSION"]}\n', "VERSION": "5.0\n"},
         "5.0.0"),
    ],
)  # fmt: skip
def test_every_common_version_source(here: Path, files: dict[str, str], version: str) -> None:
    _write(here, files)
    assert str(read_project(Path()).version) == version


@pytest.mark.parametrize(
    "setup_py",
    [
        "from setuptools import setup\nsetup(version=get_version())\n",  # not a literal
        "setup(version=\n",  # not Python: the build says why, init reads nothing from it
    ],
)
def test_a_version_that_is_no_literal_is_not_guessed(here: Path, setup_py: str) -> None:
    _write(here, {"setup.py": setup_py})
    facts = read_project(Path())
    assert facts.version is None
    _, _, notes = _plan(here)
    assert any("release 0.1 assumed" in n for n in notes)


def test_a_dynamic_attr_that_is_not_literal_is_named(here: Path) -> None:
    _write(here, {
        "pyproject.toml": '[project]\nname = "x"\ndynamic = ["version"]\n'
        '[tool.setuptools.dynamic]\nversion = {attr = "x.VERSION"}\n',
        "x/__init__.py": "VERSION = compute()\n",
    })  # fmt: skip
    _, _, notes = _plan(here)
    assert any("names x.VERSION: x/__init__.py assigns it no literal string" in n for n in notes)


@pytest.mark.parametrize(
    ("files", "floor"),
    [
        ({"setup.py": """
            from setuptools import Extension, setup
            setup(
                name="limited-ext",
                ext_modules=[Extension("lim._lim", ["lim.c"], py_limited_api=True)],
                options={"bdist_wheel": {"py_limited_api": "cp39"}},
            )
        """}, "3.9"),
        ({"setup.py": """
            from setuptools import Extension, setup
            setup(ext_modules=[Extension("lim._lim", ["lim.c"], py_limited_api=True)])
        """, "setup.cfg": "[bdist_wheel]\npy_limited_api = cp310\n"}, "3.10"),
    ],
)  # fmt: skip
def test_limited_api_c_extension_is_abi3(
    here: Path, run: Run, files: dict[str, str], floor: str
) -> None:
    _write(here, files)
    _starter, data, _notes = _plan(here)
    assert data["releases"]["0.1"]["abi3"] == floor
    assert data["project"]["import_name"] == "lim"  # from the extension module lim._lim
    _out, _ = _init_and_lint(run, here)


def test_py_limited_api_without_a_wheel_tag_is_no_abi3_and_says_why(here: Path) -> None:
    _write(here, {"setup.py": textwrap.dedent("""
        from setuptools import Extension, setup
        setup(ext_modules=[Extension("lim._lim", ["lim.c"], py_limited_api=True)])
    """)})  # fmt: skip
    _, data, notes = _plan(here)
    assert "abi3" not in data["releases"]["0.1"]
    assert any("py_limited_api=True" in n and "one wheel per Python" in n for n in notes)


def test_an_abi3_floor_above_every_python_is_left_out(here: Path) -> None:
    _write(here, {"pyproject.toml": '[tool.scikit-build]\nwheel.py-api = "cp399"\n'})
    _, data, notes = _plan(here)
    assert "abi3" not in data["releases"]["0.1"]
    assert any(n.startswith("! abi3 floor 3.99") for n in notes)


def test_hatch_vcs_project_with_tags(here: Path, run: Run) -> None:
    _write(here, {
        "pyproject.toml": """
            [build-system]
            requires = ["hatchling", "hatch-vcs"]
            build-backend = "hatchling.build"

            [project]
            name = "hv"
            dynamic = ["version"]

            [tool.hatch.version]
            source = "vcs"
        """,
        "src/hv/__init__.py": "",
    })  # fmt: skip
    _commit_and_tag(here, "v1.0.0", "v1.1.0rc1", "v0.9.0")
    _, data, notes = _plan(here)
    assert "release 1.1 from git tag v1.1.0rc1 (hatch-vcs; the next release after it) (1.1.0)" in (
        notes
    )
    assert "version" not in data["releases"]["1.1"]  # 1.1.0: the release's default
    _out, _ = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "1.1.0\n"


def test_version_txt_1_23_is_1_23_0_for_init_build_and_validation(here: Path, run: Run) -> None:
    """The field test: version.txt `1.23` was accepted by init and build and refused by
    validation (`expected 1.23.0…`): all of them now read 1.23.0."""
    _write(here, {"version.txt": "1.23\n"})
    _, _data, notes = _plan(here)
    assert "version.txt says 1.23: read as 1.23.0 (X.Y.Z, as build does)" in notes
    _out, matrix_path = _init_and_lint(run, here)
    assert (here / "version.txt").read_text() == "1.23\n"  # never replaced
    matrix = load_matrix(matrix_path)
    release = matrix.release("1.23")
    base = version_base("nightly", matrix=matrix, release=release, source=here)
    assert str(base.version) == "1.23.0"
    cell = expand_cells(matrix, "1.23", channel="nightly")[0]  # what validation expects
    stamped = stamp_version("nightly", matrix=matrix, release=release, base=base.version,
                            local=cell.local_version)  # fmt: skip
    assert stamped == cell.version and cell.version.startswith("1.23.0.dev")


def test_a_tag_above_the_version_written_is_a_warning(here: Path, run: Run) -> None:
    _write(here, {"version.txt": "1.23\n"})
    _commit_and_tag(here, "v1.24.0", "v1.22.0")
    out, _ = _init_and_lint(run, here)
    assert "  ! the newest version tag v1.24.0 (1.24.0) is above 1.23.0" in out


def test_a_final_tag_of_the_version_written_is_a_warning(here: Path) -> None:
    _write(here, {"version.txt": "2.0.0\n"})
    _commit_and_tag(here, "2.0.0")  # no v prefix: read too
    _, _, notes = _plan(here)
    assert any(
        n.startswith("! the newest version tag 2.0.0 (2.0.0) is already 2.0.0") for n in notes
    )


def test_a_tag_below_the_version_written_is_no_warning(here: Path) -> None:
    _write(here, {"version.txt": "2.1.0a0\n"})
    _commit_and_tag(here, "v2.0.0", "v2.1.0.dev3", "v9.0.0+local")  # dev, local: no releases
    _, _, notes = _plan(here)
    assert not any(n.startswith("!") for n in notes), notes


def test_tags_of_an_enclosing_repository_are_not_the_projects(here: Path) -> None:
    _commit_and_tag(here, "v9.0.0")
    project = here / "sub"
    _write(project, {"version.txt": "1.0.0\n"})
    facts = read_project(project)
    assert facts.newest_tag is None


@pytest.mark.parametrize(
    ("text", "padded"),
    [("1.23", "1.23.0"), ("2", "2.0.0"), ("1.23a0", "1.23.0a0"), ("1.2.3", "1.2.3"),
     ("1!1.2.post1.dev2+x", "1!1.2.0.post1.dev2+x"), ("1.2.3.4", "1.2.3.4")],
)  # fmt: skip
def test_pad_release(text: str, padded: str) -> None:
    assert str(pad_release(Version(text))) == padded
    assert pad_release(Version(text)) == Version(text)  # the same version, written in full


@pytest.mark.parametrize(
    ("name", "version"),
    [("v1.2.3", "1.2.3"), ("1.2", "1.2.0"), ("v2.0.0-rc1", "2.0.0rc1"), ("V3.1.0", "3.1.0"),
     ("vnext", None), ("v1.0.dev1", None), ("1.0+local", None), ("release-1.0", None)],
)  # fmt: skip
def test_tag_version(name: str, version: str | None) -> None:
    found = tag_version(name)
    assert (str(found) if found else None) == version


def test_the_import_name_of_layouts(here: Path) -> None:
    _write(here, {"pyproject.toml": '[project]\nname = "my-dist"\n',
                  "src/other_mod/__init__.py": "", "tests/__init__.py": ""})  # fmt: skip
    _, data, _ = _plan(here)
    assert data["project"]["import_name"] == "other_mod"  # src layout; tests/ is no package
    (here / "src" / "my_dist").mkdir()
    (here / "src" / "my_dist" / "__init__.py").write_text("")
    _, data, _ = _plan(here)
    assert "import_name" not in data["project"]  # the name's default is among them


def test_local_wheels_pick_the_newest_torch_for_this_arch(tmp_path: Path) -> None:
    for name in (
        "torch-2.12.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.14.0-cp312-cp312-manylinux_2_28_aarch64.whl",  # another arch
        "torchvision-0.30.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-broken.whl",
    ):
        (tmp_path / name).write_bytes(b"")
    found = local_wheels("torch", "x86_64", [tmp_path])
    assert found is not None
    assert (str(found.version), found.pythons) == ("2.13.0+cpu", ("3.11", "3.12"))
    assert local_wheels("numpy", "x86_64", [tmp_path]) is None


def test_the_real_nvcc(tmp_path: Path) -> None:
    """CUDA 13.0 is at /usr/local/cuda-13.0 on this machine (DEVELOPERS.md)."""
    nvcc = find_nvcc([Path("/usr/local/cuda-13.0/bin/nvcc")])
    assert nvcc is not None
    assert nvcc.variant == "cu130" and nvcc.version.startswith("13.0.")
    assert nvcc.arch_list == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")
    assert find_nvcc([tmp_path / "nvcc"]) is None  # not there
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'no version here'\n")
    fake.chmod(0o755)
    assert find_nvcc([fake]) is None  # answers, but no release line


def test_a_cuda_project_without_torch_builds_its_cuda_cells_in_an_image_with_nvcc(
    here: Path,
) -> None:
    """CPU cells: a plain manylinux image; CUDA cells: one that carries the toolkit of the nvcc
    found (a plain manylinux image has no nvcc: every CUDA cell would fail in CI), said so."""
    (here / "pyproject.toml").write_text('[project]\nname = "kern"\nversion = "1.0.0"\n')
    (here / "kern.cu").write_text("__global__ void k() {}\n")
    _starter, data, notes = _plan(here, nvcc=NVCC_13)
    accelerators = data["releases"]["1.0"]["accelerators"]
    images = {name: a["platforms"]["linux-x86_64"]["image"] for name, a in accelerators.items()}
    assert images == {
        "cpu": "quay.io/pypa/manylinux_2_28_x86_64",
        "cu130": "pytorch/manylinux2_28-builder:cuda13.0",
    }
    [cuda] = [n for n in notes if n.startswith("CUDA variant cu130")]
    assert "a manylinux_2_28 image with CUDA 13.0" in cuda
