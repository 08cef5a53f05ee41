"""Wheel repair per OS: auditwheel (Linux), delocate-wheel (macOS), delvewheel (Windows), each
with the platform's `repair_options` before the wheel; the options reach the build and its cache
key; macOS and Windows cells build on their runners with `relforge build` (the host builder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from relforge.builders.artifacts.postbuild import (
    AuditwheelPolicy,
    DelocatePolicy,
    DelvewheelPolicy,
    RepairPolicy,
    repair_policy,
)
from relforge.builders.backends.base import BuildJob, build_phase, repair_phase
from relforge.builders.backends.container import container_phase
from relforge.builders.buildplan import BuildRequest, plan_build
from relforge.builders.executor import CellResult, run_build
from relforge.matrix.cell import Cell
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.buildstandins import Quiet, RecordingBuilder
from tests.conftest import PYTORCH, Run, Write
from tests.workflows_support import load_workflows, scratch_repo, steps

DRIVER = ("libcuda.so.*", "libnvidia-ml.so.*", "libze_loader.so.*")


def matrix_text(linux: str = "[--exclude, libfoo.so]", windows: str = "[--no-dll, foo.dll]") -> str:
    return f"""\
schema_version: 1
project:
  name: demo
  download_url: https://example.org
channels:
  test: {{version_scheme: final, prefix: whl/test}}
releases:
  "1.0":
    python: ["3.12"]
    platforms:
      linux-x86_64:
        os: linux
        arch: x86_64
        platform_tag: manylinux_2_28_x86_64
        repair_options: {linux}
      macos-arm64:
        os: macos
        arch: arm64
        platform_tag: macosx_11_0_arm64
        cxx11_abi: false
        repair_options: [-e, /opt/homebrew/lib/libomp]
      macos-universal2:
        os: macos
        arch: arm64
        platform_tag: macosx_10_13_universal2
        cxx11_abi: false
      macos-x86_64:
        os: macos
        arch: x86_64
        platform_tag: macosx_10_9_x86_64
        cxx11_abi: false
      windows-x86_64:
        os: windows
        arch: x86_64
        platform_tag: win_amd64
        cxx11_abi: false
        repair_options: {windows}
      windows-arm64:
        os: windows
        arch: arm64
        platform_tag: win_arm64
        cxx11_abi: false
    accelerators:
      cpu:
        kind: cpu
        platforms:
          linux-x86_64: {{image: "img:cpu"}}
          macos-arm64: {{}}
          macos-universal2: {{}}
          macos-x86_64: {{}}
          windows-x86_64: {{}}
          windows-arm64: {{}}
"""


@pytest.fixture
def cells(write: Write) -> dict[str, Cell]:
    matrix = load_matrix(write(matrix_text()))
    return {c.platform: c for c in expand_cells(matrix, "1.0", channel="test")}


def policy_of(cells: dict[str, Cell], platform: str) -> RepairPolicy | None:
    """The cell's repair with its platform's options, as the executor asks for it."""
    matrix_options = {
        "linux-x86_64": ("--exclude", "libfoo.so"),
        "macos-arm64": ("-e", "/opt/homebrew/lib/libomp"),
        "windows-x86_64": ("--no-dll", "foo.dll"),
    }
    return repair_policy(cells[platform], matrix_options.get(platform, ()))


def test_the_platform_key_is_read_from_the_matrix(write: Write) -> None:
    release = load_matrix(write(matrix_text())).release("1.0")
    assert release.platforms["linux-x86_64"].repair_options == ("--exclude", "libfoo.so")
    assert release.platforms["windows-x86_64"].repair_options == ("--no-dll", "foo.dll")
    assert release.platforms["windows-arm64"].repair_options == ()


def test_linux_repairs_with_auditwheel_and_the_options_before_the_wheel(
    cells: dict[str, Cell],
) -> None:
    policy = policy_of(cells, "linux-x86_64")
    assert isinstance(policy, AuditwheelPolicy)
    assert (policy.tool, policy.what) == ("auditwheel", "auditwheel repair")
    excludes = [a for p in DRIVER for a in ("--exclude", p)]
    assert policy.argv("py", "w.whl", "out") == [
        "py", "-m", "auditwheel", "repair", "--plat", "manylinux_2_28_x86_64", "--only-plat",
        "--wheel-dir", "out", *excludes, "--exclude", "libfoo.so", "w.whl",
    ]  # fmt: skip
    assert policy.env == {}
    without = repair_policy(cells["linux-x86_64"])
    assert isinstance(without, AuditwheelPolicy)
    assert without.argv("py", "w.whl", "out")[-1:] == ["w.whl"]
    assert without.argv("py", "w.whl", "out")[-3:-1] == ["--exclude", DRIVER[-1]]


@pytest.mark.parametrize(
    ("platform", "archs", "target", "options"),
    [
        ("macos-arm64", "arm64", "11.0", ["-e", "/opt/homebrew/lib/libomp"]),
        ("macos-universal2", "arm64,x86_64", "10.13", []),
        ("macos-x86_64", "x86_64", "10.9", []),
    ],
)
def test_macos_repairs_with_delocate_requiring_the_tags_archs_and_macos(
    cells: dict[str, Cell], platform: str, archs: str, target: str, options: list[str]
) -> None:
    policy = policy_of(cells, platform)
    assert isinstance(policy, DelocatePolicy)
    assert (policy.tool, policy.what) == ("delocate", "delocate-wheel")
    assert policy.argv("py", "w.whl", "out") == [
        "py", "-m", "delocate.cmd.delocate_wheel", "--require-archs", archs,
        "--require-target-macos-version", target, "-w", "out", *options, "w.whl",
    ]  # fmt: skip
    # delocate reads it too; the build gets it so compilers target the tag's macOS
    assert policy.env == {"MACOSX_DEPLOYMENT_TARGET": target}


@pytest.mark.parametrize(
    ("platform", "options"),
    [("windows-x86_64", ["--no-dll", "foo.dll"]), ("windows-arm64", [])],
)
def test_windows_repairs_with_delvewheel(
    cells: dict[str, Cell], platform: str, options: list[str]
) -> None:
    policy = policy_of(cells, platform)
    assert isinstance(policy, DelvewheelPolicy)
    assert (policy.tool, policy.what) == ("delvewheel", "delvewheel repair")
    assert policy.argv("py", "w.whl", "out") == [
        "py", "-m", "delvewheel", "repair", "-w", "out", "--no-dll", "nvcuda.dll;nvml.dll",
        *options, "w.whl",
    ]  # fmt: skip  # the driver's DLLs are never grafted (RF-V071 accepts them)
    assert policy.env == {}


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("macos-arm64", ["-e", "libc10.dylib", "-e", "libtorch.dylib", "-e", "libtorch_",
                         "-e", "libshm.dylib"]),
        ("windows-x86_64", ["--no-dll", "nvcuda.dll;nvml.dll;c10.dll;c10_cuda.dll;torch.dll;"
                            "torch_*.dll"]),
    ],
)  # fmt: skip
def test_libraries_of_required_distributions_are_left_out(
    cells: dict[str, Cell], platform: str, expected: list[str]
) -> None:
    """What RF-V070/RF-V071 accept from a required distribution (the catalogue) is what
    delocate and delvewheel leave out: a torch extension keeps loading torch's own."""
    cell = cells[platform].replace(extra_install_requires=("torch>=2.9",))
    policy = repair_policy(cell)
    assert isinstance(policy, (DelocatePolicy, DelvewheelPolicy))
    argv = policy.argv("py", "w.whl", "out")
    at = argv.index(expected[0])
    assert argv[at : at + len(expected)] == expected


def test_tags_no_tool_repairs_get_none(cells: dict[str, Cell]) -> None:
    for platform in ("linux-x86_64", "macos-arm64", "windows-x86_64"):
        pure = cells[platform].replace(platform_tag="any")
        assert repair_policy(pure, ["--no-dll", "foo.dll"]) is None
    assert repair_policy(cells["linux-x86_64"].replace(platform_tag="linux_x86_64")) is None
    assert repair_policy(cells["macos-arm64"].replace(platform_tag=None)) is None


def test_the_cache_key_names_the_tool_and_its_options(cells: dict[str, Cell]) -> None:
    keys = {
        platform: policy.to_json()
        for platform in cells
        if (policy := policy_of(cells, platform)) is not None
    }
    assert keys["windows-x86_64"] == {
        "tool": "delvewheel",
        "options": ["--no-dll", "foo.dll"],
        "excludes": ["nvcuda.dll", "nvml.dll"],
    }
    assert keys["macos-universal2"] == {
        "tool": "delocate",
        "options": [],
        "require_archs": "arm64,x86_64",
        "target": "10.13",
        "excludes": [],
    }
    assert keys["linux-x86_64"]["tool"] == "auditwheel"
    assert keys["linux-x86_64"]["options"] == ["--exclude", "libfoo.so"]


# --- the executor: the platform's options reach the build, and its cache key ---------------


def _build(
    tmp_path: Path, text: str, cell_ids: list[str]
) -> tuple[list[CellResult], list[BuildJob]]:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "version.txt").write_text("1.0.0\n", encoding="utf-8")
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    plan = plan_build(
        BuildRequest(
            matrix=load_matrix(path),
            matrix_file=str(path),
            release="1.0",
            channel="test",
            cell_ids=cell_ids,
            source=source,
            out=tmp_path / "dist",
            state=tmp_path / ".relforge",
            jobs=1,
            tag="v1.0.0-rc1",
        )
    )
    builder = RecordingBuilder()
    results = run_build(plan, {c.id: builder for c in plan.cells}, Quiet())
    return results, builder.jobs


def _key(result: CellResult) -> str:
    assert result.entry is not None, result.reason
    key = result.entry.build["cache_key"]
    assert isinstance(key, str)
    return key


def test_the_options_reach_the_build_and_change_its_cache_key(tmp_path: Path) -> None:
    ids = [
        "wheel-linux-x86_64-py3.12-cpu",
        "wheel-windows-x86_64-py3.12-cpu",
        "wheel-macos-arm64-py3.12-cpu",
    ]
    first, jobs = _build(tmp_path, matrix_text(), ids)
    assert [r.status for r in first] == ["built"] * 3
    repairs = {job.cell.platform: job.repair for job in jobs}
    assert isinstance(repairs["linux-x86_64"], AuditwheelPolicy)
    assert repairs["linux-x86_64"].options == ("--exclude", "libfoo.so")
    assert isinstance(repairs["windows-x86_64"], DelvewheelPolicy)
    assert repairs["windows-x86_64"].options == ("--no-dll", "foo.dll")
    assert isinstance(repairs["macos-arm64"], DelocatePolicy)
    (macos,) = [job for job in jobs if job.cell.platform == "macos-arm64"]
    assert macos.env["MACOSX_DEPLOYMENT_TARGET"] == "11.0"
    assert all("MACOSX_DEPLOYMENT_TARGET" not in j.env for j in jobs if j is not macos)

    again, rebuilt = _build(tmp_path, matrix_text(), ids)
    assert [r.status for r in again] == ["cached"] * 3 and rebuilt == []
    assert [_key(r) for r in again] == [_key(r) for r in first]

    changed = matrix_text(linux="[--exclude, libbar.so]", windows="[--no-dll, bar.dll]")
    after, jobs = _build(tmp_path, changed, ids)
    assert [r.status for r in after] == ["built", "built", "cached"]  # macOS' options stayed
    assert _key(after[0]) != _key(first[0]) and _key(after[1]) != _key(first[1])
    assert _key(after[2]) == _key(first[2])
    assert [job.repair.options if job.repair else None for job in jobs] == [
        ("--exclude", "libbar.so"),
        ("--no-dll", "bar.dll"),
    ]


# --- the generated workflows: macOS and Windows cells build with `relforge build` on the host ---


def test_macos_and_windows_cells_build_with_relforge_build_on_their_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    """The repair runs inside `relforge build --builder host` on the cell's runner, with the
    tool pip installed there as relforge's dependency (its marker): the templates need nothing
    more."""
    root = tmp_path / "repo"
    scratch_repo(root, PYTORCH.read_text(encoding="utf-8"), "matrix/pytorch.yaml")
    monkeypatch.chdir(root)
    out = ".github/workflows"
    result = run("workflows", "generate", "matrix/pytorch.yaml", "--release", "2.9", "--out", out)
    assert result.code == 0, result.err
    rendered = load_workflows(root / out)
    wanted = {
        c.id: c
        for c in expand_cells(load_matrix(PYTORCH), "2.9")
        if c.os in ("macos", "windows") and c.package_type == "wheel"
    }
    assert {c.os for c in wanted.values()} == {"macos", "windows"}
    built: dict[str, dict[str, Any]] = {}
    for name in ("relforge-macos-wheel.yml", "relforge-windows-wheel.yml"):
        for job_id, job in rendered[name]["jobs"].items():
            if not job_id.startswith("build-"):
                continue
            assert job["uses"] == "./.github/workflows/relforge-build.yml"
            assert job["with"]["builder"] == "${{ matrix.builder }}"
            assert job["with"]["cell"] == "${{ matrix.id }}"
            assert job["with"]["build_runner"] == "${{ matrix.build_runner }}"
            built.update({e["id"]: e for e in job["strategy"]["matrix"]["include"]})
    assert sorted(built) == sorted(wanted)
    for cell_id, entry in built.items():
        assert entry["builder"] == "host", cell_id
        assert entry["build_runner"] == wanted[cell_id].build_runner, cell_id
        # the cell's repair is the one the host builder runs there
        policy = repair_policy(wanted[cell_id])
        expected = DelocatePolicy if wanted[cell_id].os == "macos" else DelvewheelPolicy
        assert isinstance(policy, expected), cell_id

    build = rendered["relforge-build.yml"]["jobs"]["build"]
    assert build["runs-on"] == "${{ inputs.build_runner }}"
    runs = {
        s.get("name", ""): s for job, s in steps(rendered["relforge-build.yml"]) if job == "build"
    }
    install = next(s for n, s in runs.items() if n.startswith("Install relforge"))["run"]
    [relforge] = [line for line in install.splitlines() if '"$RELFORGE_REQUIREMENT"' in line]
    assert " install " in relforge and "--no-deps" not in relforge  # the markers pick the tool
    step = runs["Build the cell"]
    assert step["env"]["BUILDER"] == "${{ inputs.builder }}"
    assert step["env"]["CELL_ID"] == "${{ inputs.cell }}"
    assert step["run"].splitlines()[-1] == (
        'relforge build matrix/pytorch.yaml --release 2.9 --channel "$CHANNEL" '
        '--cell "$CELL_ID" --builder "$BUILDER" --out dist "$@"'
    )


class Phases(Quiet):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def phase(self, cell: Cell, name: str) -> None:
        self.seen.append((cell.id, name))


def test_the_executor_and_the_builder_report_each_step_and_a_rerun_is_cached(
    tmp_path: Path,
) -> None:
    """The steps a reporter hears (what the piped lines and the live display show)."""
    cell_id = "wheel-linux-x86_64-py3.12-cpu"
    source = tmp_path / "src"
    source.mkdir()
    (source / "version.txt").write_text("1.0.0\n", encoding="utf-8")
    (tmp_path / "matrix.yaml").write_text(matrix_text(), encoding="utf-8")

    class Telling(RecordingBuilder):
        def build(self, job: BuildJob) -> None:
            job.phase(build_phase(job))
            super().build(job)

    seen: list[list[str]] = []
    for _ in range(2):
        plan = plan_build(
            BuildRequest(
                matrix=load_matrix(tmp_path / "matrix.yaml"),
                matrix_file=str(tmp_path / "matrix.yaml"),
                release="1.0",
                channel="test",
                cell_ids=[cell_id],
                source=source,
                out=tmp_path / "dist",
                state=tmp_path / ".relforge",
                jobs=1,
                tag="v1.0.0-rc1",
            )
        )
        builder, reporter = Telling(), Phases()
        [result] = run_build(plan, {cell_id: builder}, reporter)
        assert result.status in ("built", "cached"), result.reason
        seen.append([name for _, name in reporter.seen])
    assert seen == [["pip wheel", "stamping"], ["cached"]]
    assert builder.jobs == []  # the rerun built nothing


def test_a_docker_build_is_one_step_that_names_the_repair_and_the_image(tmp_path: Path) -> None:
    _results, jobs = _build(tmp_path, matrix_text(), ["wheel-linux-x86_64-py3.12-cpu"])
    [job] = jobs
    assert repair_phase(job) == "repair (auditwheel)"
    assert container_phase(job) == f"pip wheel + repair (auditwheel) in {job.cell.image}"
