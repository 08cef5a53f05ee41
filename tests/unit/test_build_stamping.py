"""Version stamping without the project's scripts: the knobs set before a build (setuptools-scm,
pdm, versioneer's folder name) and the rename of a wheel that carries the project's own version
(its `.dist-info`, METADATA, RECORD and file name; every other member's bytes copied as they
are); and RF-R005, the runtime warning for a `__version__` the build did not stamp."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from relforge.builders.artifacts.postbuild import ArtifactProblem
from relforge.builders.artifacts.stamping import SOURCE_FOLDER, restamp, source_folder, version_env
from relforge.validate.versionattr import check_version_attribute, version_verdict
from relforge.wheelformat import metadata_headers

DIST = "demo_ext"
PAYLOAD = b"\x7fELF" + bytes(range(256)) * 64  # compressible, so a recompression would show


def make_wheel(folder: Path, version: str, *, data: bool = False) -> Path:
    """A wheel of demo-ext `version` with a native member, and a .data folder when asked."""
    info = f"{DIST}-{version}.dist-info"
    files = {
        "demo_ext/__init__.py": b"from importlib.metadata import version\n",
        "demo_ext/_core.cpython-312-x86_64-linux-gnu.so": PAYLOAD,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: demo-ext\nVersion: {version}\n"
            "Requires-Dist: numpy\n\nThe version: 1.0.0 stays in the description.\n"
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n",
    }
    if data:
        files[f"{DIST}-{version}.data/scripts/demo"] = b"#!python\n"
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, content in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(content)])
    writer.writerow([f"{info}/RECORD", "", ""])
    path = folder / f"{DIST}-{version}-cp312-cp312-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
        zf.writestr(f"{info}/RECORD", record.getvalue())
    return path


def compressed(path: Path, member: str) -> bytes:
    """The stored (compressed) bytes of one member."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = path.read_bytes()
    head = info.header_offset
    name_length = int.from_bytes(raw[head + 26 : head + 28], "little")
    extra_length = int.from_bytes(raw[head + 28 : head + 30], "little")
    start = head + 30 + name_length + extra_length
    return raw[start : start + info.compress_size]


def record_is_true(path: Path) -> bool:
    with zipfile.ZipFile(path) as zf:
        [record] = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        rows = list(csv.reader(io.StringIO(zf.read(record).decode())))
        listed = {row[0] for row in rows if row}
        if listed != set(zf.namelist()):
            return False
        for name, digest, size in (r for r in rows if r and r[1]):
            content = zf.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
            if digest != f"sha256={want.decode()}" or int(size) != len(content):
                return False
    return True


@pytest.mark.parametrize("built", ["1.0.0", "1.0", "1.0.0.post1", "0+unknown", "0.0.0", "0"])
def test_the_projects_own_version_or_a_placeholder_becomes_the_cells(
    tmp_path: Path, built: str
) -> None:
    wheel = make_wheel(tmp_path, built, data=True)
    native = compressed(wheel, "demo_ext/_core.cpython-312-x86_64-linux-gnu.so")
    done = restamp(wheel, "1.0.0.dev0+cpu")
    assert done is not None and done.built == built
    assert done.path.name == f"{DIST}-1.0.0.dev0+cpu-cp312-cp312-linux_x86_64.whl"
    assert not wheel.exists()
    with zipfile.ZipFile(done.path) as zf:
        names = set(zf.namelist())
    assert f"{DIST}-1.0.0.dev0+cpu.dist-info/METADATA" in names
    assert f"{DIST}-1.0.0.dev0+cpu.data/scripts/demo" in names
    old = (f"{DIST}-{built}.dist-info/", f"{DIST}-{built}.data/")
    assert not any(n.startswith(old) for n in names)
    headers = metadata_headers(done.path)
    assert headers["Version"] == "1.0.0.dev0+cpu"
    assert headers.get_all("Requires-Dist") == ["numpy"]
    assert "The version: 1.0.0 stays" in headers.get_payload()
    assert record_is_true(done.path)
    # the native member was copied, not inflated and deflated again
    assert compressed(done.path, "demo_ext/_core.cpython-312-x86_64-linux-gnu.so") == native


@pytest.mark.parametrize("built", ["1.0.0.dev0+cpu", "1.0.0.dev0+CPU"])
def test_a_wheel_of_the_cells_version_is_left_alone(tmp_path: Path, built: str) -> None:
    wheel = make_wheel(tmp_path, built)
    before = wheel.read_bytes()
    assert restamp(wheel, "1.0.0.dev0+cpu") is None
    assert wheel.read_bytes() == before


@pytest.mark.parametrize("built", ["2.0.0", "0.9.1", "1.0.1", "1!1.0.0"])
def test_another_release_is_not_renamed(tmp_path: Path, built: str) -> None:
    """A version of another release means the source or the matrix is wrong: check_wheel
    then fails the cell with the reason, nothing hides it."""
    wheel = make_wheel(tmp_path, built)
    assert restamp(wheel, "1.0.0+cpu") is None
    assert wheel.exists()


def test_a_wheel_that_cannot_be_renamed_fails_the_cell(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "1.0.0")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr(f"{DIST}-1.0.0.dist-info/RECORD.jws", b"{}")
    with pytest.raises(ArtifactProblem, match="signed wheel"):
        restamp(wheel, "1.0.0+cpu")


def test_the_knobs_of_version_plugins_name_the_distribution() -> None:
    assert version_env("Demo.Ext-lib", "1.0.0+cpu") == {
        "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_DEMO_EXT_LIB": "1.0.0+cpu",
        "PDM_BUILD_SCM_VERSION": "1.0.0+cpu",
    }


@pytest.mark.parametrize(
    ("files", "folder"),
    [
        ({}, SOURCE_FOLDER),
        (
            {"setup.cfg": "[versioneer]\nVCS = git\nparentdir_prefix = demo-ext-\n"},
            "demo-ext-1.0.0+cpu",
        ),
        ({"setup.cfg": "[versioneer]\nVCS = git\nparentdir_prefix =\n"}, SOURCE_FOLDER),
        (
            {"pyproject.toml": '[tool.versioneer]\nparentdir_prefix = "demo_ext-"\n'},
            "demo_ext-1.0.0+cpu",
        ),
        ({"setup.cfg": "[metadata]\nname = demo-ext\n"}, SOURCE_FOLDER),
    ],
)
def test_versioneer_reads_the_version_from_the_source_folders_name(
    tmp_path: Path, files: dict[str, str], folder: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert source_folder(tmp_path, "1.0.0+cpu") == folder


@pytest.mark.parametrize(
    ("reported", "status"),
    [
        ("1.0.0.dev0+cpu", "pass"),
        ("1.0.0.dev0+CPU", "pass"),  # the same PEP 440 version
        ("0+unknown", "warn"),
        ("1.0.0", "warn"),
        ("not a version", "warn"),
        (None, "skip"),
    ],
)
def test_runtime_warns_when_the_code_reports_another_version(reported: object, status: str) -> None:
    wheel = Path(f"{DIST}-1.0.0.dev0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl")
    verdict = version_verdict(reported, wheel, "demo_ext")
    assert (verdict.check, verdict.status) == ("RF-R005", status)
    if status == "warn":
        assert (
            f"demo_ext.__version__ is {reported!r}, the wheel is 1.0.0.dev0+cpu" in verdict.message
        )


def test_the_version_probe_runs_the_installed_module() -> None:
    wheel = Path(f"{DIST}-1.0.0-py3-none-any.whl")
    ran: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        ran.append(argv)
        return 0, 'noise from the import\n"0+unknown"\n', ""

    verdict = check_version_attribute(run, "/venv/bin/python", wheel, "demo_ext")
    assert verdict.status == "warn" and ran[0][:2] == ["/venv/bin/python", "-c"]
    assert "import json, demo_ext as m" in ran[0][2]
    failed = check_version_attribute(
        lambda a: (1, "", "Traceback\nImportError: x\n"), "p", wheel, "m"
    )
    assert (
        failed.status == "skip" and "import m failed: Traceback | ImportError: x" in failed.message
    )
