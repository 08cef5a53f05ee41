"""The example's native archive cell: the matrix names its build command and file name, the
build plan runs that command for it (and the wheel command for wheels), and a build that writes
another name, or a matrix whose template cannot name a file, is refused."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from relforge.builders.artifacts.postbuild import ArtifactProblem, check_archive_name
from relforge.builders.buildplan import BuildRequest, plan_build
from relforge.errors import ConfigError
from relforge.matrix.archivenames import (
    archive_filename,
    archive_url,
    archive_version,
    shown_version,
)
from relforge.matrix.docs import render_docs
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.promote.archives import archive_folders
from relforge.promote.cells import ChannelCells
from relforge.workflows.context import pr_paths
from tests.conftest import EXAMPLE, REPO

ARCHIVE = "libtorch-linux-x86_64-cpu-shared-with-deps-release"
PYTORCH = REPO / "matrix" / "pytorch.yaml"
STEM = "hello-native-linux-x86_64-shared-with-deps-release-"  # the default libtorch.file_name


def _matrix(tmp_path: Path, old: str = "", new: str = "") -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert old in text
    text = text.replace("source: ../examples/hello-native", f"source: {EXAMPLE.parent.parent}")
    path = tmp_path / "example.yaml"
    path.write_text(text.replace(old, new, 1) if old else text, encoding="utf-8")
    return path


def test_the_archive_cell_gets_the_archive_command(tmp_path: Path) -> None:
    path = _matrix(tmp_path)
    plan = plan_build(
        BuildRequest(
            matrix=load_matrix(path),
            matrix_file=str(path),
            release="1.0",
            channel="test",
            cell_ids=[ARCHIVE, "wheel-linux-x86_64-py3.12-cpu"],
            out=tmp_path / "dist",
            state=tmp_path / ".relforge",
            tag="v1.0.0-rc1",
        )
    )
    archive, wheel = plan.cells
    assert plan.command_for(archive) == ("python3", "build_archive.py")
    assert plan.command_for(wheel) == ()  # the PEP 517 build
    assert ("archive command", "python3 build_archive.py") in plan.summary()
    assert archive.version == "1.0.0+cpu"
    name = archive_filename(plan.matrix, plan.release, archive, archive.version)
    assert name == f"{STEM}1.0.0+cpu.zip"


def test_no_archive_command_is_refused_with_the_key(tmp_path: Path) -> None:
    path = _matrix(
        tmp_path, "    archive_command: [python3, build_archive.py]", "    archive_command: []"
    )
    with pytest.raises(ConfigError) as info:
        plan_build(
            BuildRequest(
                matrix=load_matrix(path),
                matrix_file=str(path),
                release="1.0",
                channel="nightly",
                cell_ids=[ARCHIVE],
                out=tmp_path / "dist",
                state=tmp_path / ".relforge",
            )
        )
    assert info.value.key == "project.build.archive_command"
    assert "names no build command" in info.value.message


def test_without_archive_command_the_build_command_builds_archives_too(tmp_path: Path) -> None:
    path = _matrix(
        tmp_path,
        "    command: []",
        "    command: [sh, build.sh]",
    )
    path.write_text(
        path.read_text().replace("archive_command: [python3, build_archive.py]", "max_jobs: 0")
    )
    build = load_matrix(path).project.build
    assert build.command_for("archive") == ("sh", "build.sh")
    assert build.command_for("wheel") == ("sh", "build.sh")


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{project}-{arch}-{version}.zip", "unknown field(s) 'arch'"),
        ("{project}-{libtorch_variant}.zip", "must contain {version}"),
        ("{project}-{version}.tar.gz", "must be a .zip file name"),
        ("lib/{project}-{version}.zip", "must be a .zip file name"),
        ("{project-{version}.zip", "is not a template"),
    ],
)
def test_a_bad_file_name_template_names_file_line_and_key(
    tmp_path: Path, template: str, says: str
) -> None:
    path = _matrix(
        tmp_path,
        "      configs: [release]\n",
        f"      configs: [release]\n      file_name: '{template}'\n",
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    assert says in info.value.message
    assert info.value.key == "releases.1.0.libtorch.file_name"
    assert info.value.where is not None and info.value.where.line > 0


def test_a_build_that_writes_another_name_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "libhello.zip"
    with zipfile.ZipFile(wrong, "w"):
        pass
    with pytest.raises(ArtifactProblem, match="the matrix names this archive hello-native-"):
        check_archive_name(wrong, f"{STEM}1.0.0+cpu.zip")
    check_archive_name(wrong, "libhello.zip")  # the right name passes


def test_urls_and_nightly_pattern() -> None:
    matrix = load_matrix(EXAMPLE)
    (nightly,) = [
        c for c in expand_cells(matrix, "1.0", channel="nightly") if c.package_type != "wheel"
    ]
    assert nightly.upload_prefix == "libtorch/nightly/cpu/"
    assert shown_version(nightly) == "1.0.0.devYYYYMMDD+cpu"
    (release,) = [
        c for c in expand_cells(matrix, "1.0", channel="release") if c.package_type != "wheel"
    ]
    assert release.upload_prefix == "libtorch/cpu/"
    assert shown_version(release) == "1.0.0+cpu"
    url = archive_url("https://example.org/libtorch/cpu/", "a-1.0.0+cpu.zip")
    assert url == "https://example.org/libtorch/cpu/a-1.0.0%2Bcpu.zip"


def test_pull_requests_that_touch_the_archive_script_build() -> None:
    matrix = load_matrix(EXAMPLE)
    paths = pr_paths(matrix, "matrix/example.yaml", ".github/workflows", None)
    assert "examples/hello-native/build_archive.py" in paths


def test_matrix_docs_list_each_archive_file_per_channel(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace(
        "  display_name: hello-native\n",
        "  display_name: hello-native\n  download_url: https://dl.example.org\n",
    )
    path = tmp_path / "example.yaml"
    path.write_text(text)
    docs = render_docs(load_matrix(path))
    row = next(line for line in docs.splitlines() if "shared-with-deps (release)" in line)
    base = "https://dl.example.org/libtorch"
    assert row.split(" | ")[1:3] == ["linux-x86_64", "shared-with-deps (release)"]
    assert f"`{base}/nightly/cpu/{STEM}1.0.0.devYYYYMMDD%2Bcpu.zip`" in row
    assert f"`{base}/test/cpu/{STEM}1.0.0%2Bcpu.zip`" in row
    assert f"`{base}/cpu/{STEM}1.0.0%2Bcpu.zip`" in row
    assert "in place of YYYYMMDD" in docs


def test_pytorch_archives_are_named_as_pytorch_names_them() -> None:
    docs = render_docs(load_matrix(PYTORCH), ["2.7", "2.9"])
    base = "https://download.pytorch.org/libtorch"
    assert f"{base}/cu128/libtorch-shared-with-deps-2.9.0%2Bcu128.zip`" in docs
    assert f"{base}/cu128/libtorch-win-shared-with-deps-debug-2.9.0%2Bcu128.zip`" in docs
    assert f"{base}/cu126/libtorch-cxx11-abi-shared-with-deps-2.7.0%2Bcu126.zip`" in docs


def test_a_bad_per_platform_file_name_names_its_key(tmp_path: Path) -> None:
    path = _matrix(
        tmp_path,
        "      configs: [release]\n",
        "      configs: [release]\n      per_platform:\n"
        "        linux-x86_64: {file_name: 'x-{version}.tar'}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    assert info.value.key == "releases.1.0.libtorch.per_platform.linux-x86_64.file_name"


def test_archive_folders_are_only_folders_without_wheels(tmp_path: Path) -> None:
    path = tmp_path / "example.yaml"
    path.write_text(EXAMPLE.read_text())
    assert archive_folders(ChannelCells(load_matrix(path), "test")) == ["libtorch/test/cpu"]
    text = EXAMPLE.read_text().replace(", libtorch_prefix: libtorch/test}", "}")
    path.write_text(text)  # no archive prefix: archives go to the wheel folder, which keeps pages
    matrix = load_matrix(path)
    (cell,) = [c for c in expand_cells(matrix, "1.0", channel="test") if c.package_type != "wheel"]
    assert cell.upload_prefix == "whl/test/cpu/"
    assert archive_folders(ChannelCells(matrix, "test")) == []


def test_the_version_is_read_back_from_an_archive_name() -> None:
    matrix = load_matrix(EXAMPLE)
    release = matrix.release("1.0")
    (cell,) = [c for c in expand_cells(matrix, "1.0") if c.package_type != "wheel"]
    name = f"{STEM}1.0.0.dev20260102+cpu.zip"
    assert archive_version(matrix, release, cell, name) == "1.0.0.dev20260102+cpu"
    assert archive_version(matrix, release, cell, name + ".sha256") is None
    assert archive_version(matrix, release, cell, f"{STEM}.zip") is None
    assert archive_version(matrix, release, cell, "other-1.0.0+cpu.zip") is None
