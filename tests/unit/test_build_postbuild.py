"""Post-build: repair policy from the cell, Requires-Dist injection, artifact checks."""

from __future__ import annotations

import base64
import csv
import fnmatch
import hashlib
import io
import re
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from relforge.builders.artifacts.postbuild import (
    ArtifactProblem,
    AuditwheelPolicy,
    DelvewheelPolicy,
    cell_requirements,
    check_wheel,
    declare_requirements,
    pick_artifact,
    repair_policy,
)
from relforge.builders.artifacts.wheelfile import add_requires_dist, requires_dist
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.providedlibs import DRIVER as DRIVER_MARK
from relforge.providedlibs import (
    declared_by,
    library_os,
    library_providers,
    linux_environment,
    providers_of,
)
from tests.conftest import PYTORCH


@pytest.fixture(scope="module")
def cells() -> dict[str, Cell]:
    matrix = load_matrix(PYTORCH)
    return {c.id: c for r in ("2.7", "2.9") for c in expand_cells(matrix, r, channel="test")}


def make_wheel(path: Path, metadata: str) -> Path:
    files = {
        "demo/__init__.py": b"x = 1\n",
        "demo-1.0.0+cu128.dist-info/METADATA": metadata.encode(),
        "demo-1.0.0+cu128.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n",
    }
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow(["demo-1.0.0+cu128.dist-info/RECORD", "", ""])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("demo-1.0.0+cu128.dist-info/RECORD", record.getvalue())
    return path


def record_is_true(path: Path) -> bool:
    with zipfile.ZipFile(path) as zf:
        rows = csv.reader(io.StringIO(zf.read("demo-1.0.0+cu128.dist-info/RECORD").decode()))
        for name, digest, size in rows:
            if not digest:
                continue
            data = zf.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if digest != f"sha256={want}" or int(size) != len(data):
                return False
    return True


DRIVER = {"libcuda.so.*", "libnvidia-ml.so.*", "libze_loader.so.*"}


def test_cuda_cell_excludes_driver_and_declared_libraries(cells: dict[str, Cell]) -> None:
    policy = repair_policy(cells["wheel-linux-x86_64-py3.12-cu128"])
    assert isinstance(policy, AuditwheelPolicy)
    assert policy.plat == "manylinux_2_28_x86_64"
    for soname in (*DRIVER, "libcudnn*.so.9", "libnccl.so.2", "libcudart.so.12"):
        assert soname in policy.excludes
    assert "libcudart.so.13" not in policy.excludes  # CUDA 13's runtime is another package
    argv = policy.argv("py", "w.whl", "out")
    assert argv[:7] == ["py", "-m", "auditwheel", "repair", "--plat", policy.plat, "--only-plat"]
    assert argv[-1] == "w.whl"


def test_bundling_cell_excludes_only_driver_libraries(cells: dict[str, Cell]) -> None:
    full = next(c for c in cells.values() if c.bundles_libraries and c.os == "linux")
    policy = repair_policy(full)
    assert isinstance(policy, AuditwheelPolicy)
    assert set(policy.excludes) == DRIVER


def test_no_auditwheel_off_linux_and_no_repair_for_archives(cells: dict[str, Cell]) -> None:
    # Windows wheels are repaired by delvewheel (tests/unit/test_repair_policies.py)
    assert isinstance(repair_policy(cells["wheel-windows-x86_64-py3.12-cu128"]), DelvewheelPolicy)
    assert repair_policy(next(c for c in cells.values() if c.package_type == "archive")) is None
    cpu = repair_policy(cells["wheel-linux-x86_64-py3.12-cpu"])
    assert isinstance(cpu, AuditwheelPolicy) and set(cpu.excludes) == DRIVER


def _torch_axis_cell(cells: dict[str, Cell]) -> Cell:
    cpu = cells["wheel-linux-x86_64-py3.12-cpu"]
    return cpu.replace(
        axes={"torch": "2.13"},
        axis_install={"torch": ("torch==2.13.0",)},
        axis_requires=("torch==2.13.*",),
    )


def test_a_torch_axis_keeps_torchs_libraries_out_of_the_wheel(cells: dict[str, Cell]) -> None:
    """The issue's torch extension: repair could not find libc10.so, which `wheel inspect`
    calls declared by torch; with torch from an axis, repair leaves it and its siblings out."""
    policy = repair_policy(_torch_axis_cell(cells))
    assert isinstance(policy, AuditwheelPolicy)
    for library in ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so"):
        assert any(fnmatch.fnmatch(library, p) for p in policy.excludes), library
    assert not any(fnmatch.fnmatch("libcudart.so.12", p) for p in policy.excludes)
    argv = policy.argv("py", "w.whl", "out")
    at = argv.index("libc10.so")
    assert argv[at - 1] == "--exclude"


@pytest.mark.parametrize(
    "cell_id",
    ["wheel-linux-x86_64-py3.12-cu128", "wheel-linux-x86_64-py3.12-cpu", "torch-axis"],
)
def test_what_repair_leaves_out_is_what_validation_accepts(
    cells: dict[str, Cell], cell_id: str
) -> None:
    """One idea of "provided by a dependency": every library (of every catalogue entry) that
    repair excludes for a cell is one RF-V041 accepts from the Requires-Dist the build gives
    the wheel, and every catalogue library those requirements provide is excluded."""
    cell = _torch_axis_cell(cells) if cell_id == "torch-axis" else cells[cell_id]
    policy = repair_policy(cell)
    assert isinstance(policy, AuditwheelPolicy)
    declared = [Requirement(r) for r in cell_requirements(cell)]
    environment = linux_environment(cell.arch, cell.python_tag)
    for pattern in library_providers():
        if library_os(pattern) != "linux":  # Windows and macOS entries: not auditwheel's
            continue
        library = pattern.replace("*", "7")
        excluded = any(fnmatch.fnmatch(library, p) for p in policy.excludes)
        accepted = DRIVER_MARK in providers_of(library) or (
            declared_by(library, declared, environment) is not None
        )
        assert excluded == accepted, (library, excluded, accepted)


def test_requires_dist_added_once_and_record_updated(tmp_path: Path) -> None:
    metadata = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0.0+cu128\n\nA long description.\n"
    wheel = make_wheel(tmp_path / "demo-1.0.0+cu128-py3-none-any.whl", metadata)
    pins = ["nvidia-cudnn-cu12==9.10.2.21; platform_system == 'Linux'", "nvidia-nccl-cu12==2.27.5"]
    assert add_requires_dist(wheel, pins) == pins
    assert add_requires_dist(wheel, pins) == []  # a rerun adds nothing
    assert requires_dist(wheel) == pins
    assert record_is_true(wheel)
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read("demo-1.0.0+cu128.dist-info/METADATA").decode()
    assert text.endswith("\n\nA long description.\n")  # the body stays after the headers


def test_declare_requirements_follows_the_cell(cells: dict[str, Cell], tmp_path: Path) -> None:
    metadata = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0.0+cu128\n"
    cuda = cells["wheel-linux-x86_64-py3.12-cu128"]
    wheel = make_wheel(tmp_path / "demo-1.0.0+cu128-py3-none-any.whl", metadata)
    assert declare_requirements(wheel, cuda) == list(cuda.extra_install_requires)
    assert len(requires_dist(wheel)) == len(cuda.extra_install_requires) > 10
    bundled = cells["wheel-windows-x86_64-py3.12-cu128"]
    assert bundled.bundles_libraries
    other = make_wheel(tmp_path / "other-1.0.0+cu128-py3-none-any.whl", metadata)
    assert declare_requirements(other, bundled) == []
    assert requires_dist(other) == []


def test_check_wheel_names_the_mismatch(cells: dict[str, Cell], tmp_path: Path) -> None:
    cell = cells["wheel-linux-x86_64-py3.12-cu128"]
    version = cell.version or ""
    good = Path(f"torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl")
    check_wheel(good, cell, project="torch", version=version)
    want = "the cell builds cp312-cp312-manylinux_2_28_x86_64: "
    bad = {
        f"torch-{version}-cp312-cp312-manylinux_2_34_x86_64.whl": "the build reached "
        "manylinux_2_34_x86_64, not manylinux_2_28_x86_64",
        f"torch-{version}-cp312-cp312-linux_x86_64.whl": "not repaired to manylinux_2_28_x86_64",
        f"torch-{version}-py3-none-any.whl": want + "the build made a pure-Python wheel",
        f"torch-{version}-cp311-cp311-manylinux_2_28_x86_64.whl": "the wheel is "
        "cp311-cp311-manylinux_2_28_x86_64; " + want + "the build ran with Python 3.11",
        f"torch-{version}-cp312-cp312t-manylinux_2_28_x86_64.whl": "build it with python3.12, "
        "not python3.12t",
        # an abi3 wheel passed before (any abi3 tag was taken for the cell's Python)
        f"torch-{version}-cp312-abi3-manylinux_2_28_x86_64.whl": "the wheel is "
        f"cp312-abi3-manylinux_2_28_x86_64; {want}it is an abi3 wheel: declare "
        '`abi3: "3.12"` on the variant cu128',
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl": "has version 2.9.0, the cell builds",
        f"vision-{version}-cp312-cp312-manylinux_2_28_x86_64.whl": "is not a wheel of torch",
    }
    for name, problem in bad.items():
        with pytest.raises(ArtifactProblem, match=re.escape(problem)):
            check_wheel(Path(name), cell, project="torch", version=version)


def test_check_wheel_of_an_abi3_cell(tmp_path: Path) -> None:
    """An abi3 cell wants its floor's cpXY-abi3 wheel: a version-specific one, or another
    floor, fails with the fix; the declared wheel passes."""
    matrix = load_matrix(PYTORCH)
    cell = expand_cells(matrix, "2.9", channel="test")[0]
    cell = cell.replace(python_tag="cp310", abi_tag="abi3", limited_api="3.10")
    version = cell.version or ""
    plat = cell.platform_tag or ""
    check_wheel(
        Path(f"torch-{version}-cp310-abi3-{plat}.whl"), cell, project="torch", version=version
    )
    bad = {
        f"torch-{version}-cp310-cp310-{plat}.whl": "build with the limited API",
        f"torch-{version}-cp39-abi3-{plat}.whl": "the build's limited-API floor is 3.9, the "
        "matrix's 3.10",
    }
    for name, problem in bad.items():
        with pytest.raises(ArtifactProblem, match=re.escape(problem)):
            check_wheel(Path(name), cell, project="torch", version=version)


def test_pick_artifact_wants_exactly_one_wheel(cells: dict[str, Cell], tmp_path: Path) -> None:
    cell = cells["wheel-linux-x86_64-py3.12-cpu"]
    a, b, log = tmp_path / "a.whl", tmp_path / "b.whl", tmp_path / "build.log"
    assert pick_artifact([a, log], cell) == a
    with pytest.raises(ArtifactProblem, match=re.escape("one wheel, it wrote a.whl, b.whl")):
        pick_artifact([a, b], cell)
    with pytest.raises(ArtifactProblem, match="it wrote nothing"):
        pick_artifact([], cell)
