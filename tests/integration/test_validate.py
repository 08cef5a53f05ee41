"""`relforge validate` and `relforge wheel inspect` on real wheels compiled by the tests."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from relforge.manifest import ArtifactManifest, ManifestEntry, load_manifest, sha256_file
from tests.conftest import Run
from tests.wheelfactory import (
    PROJECT,
    PYTHON,
    PYTHON_TAG,
    Build,
    WheelSpec,
    compile_extension,
    serve_index,
)
from tests.wheelfactory import write_wheel as _write_wheel

CPU = f"wheel-linux-x86_64-py{PYTHON}-cpu"
CUDA = f"wheel-linux-x86_64-py{PYTHON}-cu130"
CUDA_PIN = "nvidia-cuda-runtime==13.0.48; platform_system == 'Linux'"
MATRIX = f"""\
schema_version: 1
project:
  name: {PROJECT}
  size_limit_mb: 1
  build:
    smoke: ["python", "-c", "import demo_ext; print(demo_ext.__version__, demo_ext.build_info())"]
releases:
  "1.0":
    python: ["{PYTHON}"]
    platforms:
      linux-x86_64: {{os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}}
    accelerators:
      cpu:
        kind: cpu
        platforms: {{linux-x86_64: {{}}}}
      cu130:
        kind: cuda
        version: 13.0.0
        extra_install_requires: ["{CUDA_PIN}"]
        platforms: {{linux-x86_64: {{}}}}
    pypi_default: {{linux-x86_64: cpu}}
"""
VERSION = {"cpu": "1.0.0+cpu", "cu130": "1.0.0+cu130"}
# a CUDA build (device code and all) whose one fault is an absolute RPATH (RF-V043)
CUDA_BUILD_WITH_RPATH = Build(variant="cu130", accelerator="cuda", rpath="/opt/build/lib")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ext(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Build], bytes]:
    """Compile the demo extension once per distinct build."""
    cache: dict[Build, bytes] = {}
    root = tmp_path_factory.mktemp("ext")

    def get(build: Build) -> bytes:
        if build not in cache:
            cache[build] = compile_extension(build, root / f"b{len(cache)}")
        return cache[build]

    return get


def good_spec(ext: Callable[[Build], bytes], variant: str, **changes: object) -> WheelSpec:
    if variant == "cpu":
        spec = WheelSpec(version=VERSION["cpu"], extension=ext(Build()))
    else:
        build = Build(variant="cu130", accelerator="cuda", needs_library="libcudart.so.13")
        spec = WheelSpec(version=VERSION["cu130"], extension=ext(build), requires_dist=[CUDA_PIN])
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    return path


def run_json(run: Run, *args: str) -> tuple[int, dict[str, Any]]:
    result = run(*args, "--format", "json")
    return result.code, json.loads(result.out)


def failing(report: dict[str, Any], subject: str) -> set[str]:
    """IDs of the failed checks of one subject (a cell id or a stray file name)."""
    artifacts = report["artifacts"]
    assert isinstance(artifacts, list)
    found = [a for a in artifacts if a["subject"] == subject]
    assert found, f"no report for {subject}"
    return {v["check"] for a in found for v in a["verdicts"] if v["status"] == "fail"}


def test_good_wheels_pass(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    _write_wheel(good_spec(ext, "cpu"), dist)
    _write_wheel(good_spec(ext, "cu130"), dist)
    code, report = run_json(
        run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist)
    )
    assert code == 0, report
    assert report["status"] == "pass"
    assert {a["subject"] for a in report["artifacts"]} == {CPU, CUDA}
    statuses = {
        (a["subject"], v["check"]): v["status"] for a in report["artifacts"] for v in a["verdicts"]
    }
    every = "RF-V100 RF-V011 RF-V012 RF-V013 RF-V020 RF-V021 RF-V030 RF-V031 RF-V040 RF-V041"
    every += " RF-V042 RF-V043 RF-V044 RF-V050 RF-V032 RF-V033 RF-V045 RF-V046"
    for check in every.split():
        assert statuses[(CPU, check)] == "pass", check
        assert statuses[(CUDA, check)] == "pass", check


def test_validate_with_a_dependency_wheel_checks_the_abi_contract(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """--with: the CUDA wheel's libcudart.so.13 comes from a runtime wheel that lacks the symbol
    the extension was linked against (RF-V046), and where it is found (RF-V041)."""
    dist = tmp_path / "dist"
    _write_wheel(good_spec(ext, "cu130"), dist)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "other.c").write_text("int other_function(void) { return 1; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", str(stub / "other.c"),
         "-o", str(stub / "libcudart.so.13")],
        check=True,
    )  # fmt: skip
    runtime = _write_wheel(
        WheelSpec(
            name="nvidia-cuda-runtime",
            version="13.0.48",
            python_tag="py3",
            abi_tag="none",
            extra_files={
                "nvidia/cu13/lib/libcudart.so.13": (stub / "libcudart.so.13").read_bytes()
            },
        ),
        tmp_path / "deps",
    )
    code, report = run_json(
        run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
        "--select", "variant=cu130", "--with", str(runtime),
    )  # fmt: skip
    assert code == 4 and failing(report, CUDA) == {"RF-V046"}
    [cuda] = report["artifacts"]
    [abi] = [v for v in cuda["verdicts"] if v["check"] == "RF-V046"]
    assert abi["message"].startswith("libcudart.so.13: 1 missing: stub_function")
    [libs] = [v for v in cuda["verdicts"] if v["check"] == "RF-V041"]
    assert libs["status"] == "pass"

    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"no zip")
    broken = run(
        "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist), "--with", str(junk)
    )
    assert broken.code == 2 and "--with" in broken.err and "not a zip" in broken.err


BROKEN: dict[str, tuple[str, Callable[[Callable[[Build], bytes]], WheelSpec], set[str]]] = {
    "wrong-platform-tag": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", platform_tag="manylinux_2_34_x86_64"),
        {"RF-V012", "RF-V100"},
    ),
    "tampered-record-hash": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", tamper_record="demo_ext/__init__.py"),
        {"RF-V031"},
    ),
    "unlisted-file": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", unlisted={"demo_ext/sneaky.py": b"print(1)\n"}),
        {"RF-V030"},
    ),
    "missing-pin": (
        "cu130",
        lambda ext: WheelSpec(
            version=VERSION["cu130"], extension=ext(Build(variant="cu130", accelerator="cuda"))
        ),
        {"RF-V020"},
    ),
    "wrong-pin": (
        "cu130",
        lambda ext: good_spec(
            ext, "cu130", requires_dist=["nvidia-cuda-runtime==13.0.0; platform_system == 'Linux'"]
        ),
        {"RF-V020"},
    ),
    "cuda-pin-on-cpu-wheel": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", requires_dist=[CUDA_PIN]),
        {"RF-V020"},
    ),
    "glibc-newer-than-tag": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extension=ext(Build(threads=True))),
        {"RF-V040"},
    ),
    "pre-cxx11-in-cxx11-cell": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extension=ext(Build(cxx11_abi=False))),
        {"RF-V042"},
    ),
    "absolute-rpath": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extension=ext(Build(rpath="/abs/build/path/lib"))),
        {"RF-V043"},
    ),
    "oversize": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extra_files={"demo_ext/blob.bin": os.urandom(1_200_000)}),
        {"RF-V050"},
    ),
    "undeclared-library": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extension=ext(Build(needs_library="libfoo.so.1"))),
        {"RF-V041"},
    ),
    "wheel-file-tags-differ": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", wheel_tags=["py3-none-any"]),
        {"RF-V011"},
    ),
    "requires-python-differs": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", requires_python=">=3.8"),
        {"RF-V021"},
    ),
    "elf-for-another-machine": (
        "cpu",
        lambda ext: good_spec(ext, "cpu", extension=_machine(ext(Build()), 183)),
        {"RF-V044"},
    ),
}


def _machine(elf: bytes, e_machine: int) -> bytes:
    """The ELF with another e_machine (183: aarch64) in its header."""
    return elf[:18] + e_machine.to_bytes(2, "little") + elf[20:]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_wheel_fires_its_check(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path, case: str
) -> None:
    variant, make, expected = BROKEN[case]
    dist = tmp_path / "dist"
    _write_wheel(make(ext), dist)
    other = "cu130" if variant == "cpu" else "cpu"
    _write_wheel(good_spec(ext, other), dist)
    code, report = run_json(
        run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist)
    )
    assert code == 4
    subject = CPU if variant == "cpu" else CUDA
    assert failing(report, subject) == expected
    assert failing(report, CUDA if variant == "cpu" else CPU) == set()


def test_glibc_check_names_the_symbol_version(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    _write_wheel(good_spec(ext, "cpu", extension=ext(Build(threads=True))), dist)
    _, report = run_json(
        run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist),
        "--select", "variant=cpu",
    )  # fmt: skip
    [cpu] = report["artifacts"]
    [verdict] = [v for v in cpu["verdicts"] if v["check"] == "RF-V040"]
    assert "libc.so.6: GLIBC_2.34" in verdict["message"]


def test_completeness_missing_extra_duplicate(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    good = _write_wheel(good_spec(ext, "cpu"), dist)
    # the same cell again, differing only by a build tag
    dup = dist / good.name.replace("+cpu-", "+cpu-1-")
    dup.write_bytes(good.read_bytes())
    # a wheel of another project: belongs to no cell
    stray = _write_wheel(good_spec(ext, "cpu", name="other-project"), dist)
    code, report = run_json(
        run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist)
    )
    assert code == 4
    assert failing(report, CUDA) == {"RF-V100"}  # missing
    assert "RF-V102" in failing(report, CPU)  # duplicate
    assert "RF-V101" in failing(report, stray.name)  # extra
    [missing] = [a for a in report["artifacts"] if a["subject"] == CUDA]
    assert "demo_ext-1.0.0+cu130-" in missing["verdicts"][0]["message"]


def test_json_and_junit_shapes(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    _write_wheel(good_spec(ext, "cpu", tamper_record="demo_ext/__init__.py"), dist)
    _write_wheel(good_spec(ext, "cu130"), dist)
    args = ("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist))
    code, report = run_json(run, *args)
    assert code == 4
    assert set(report) == {
        "schema_version",
        "project",
        "release",
        "channel",
        "status",
        "counts",
        "artifacts",
        "checks",
    }
    assert report["checks"]["RF-V031"]["name"] == "record-hashes"
    assert report["counts"]["fail"] == 1
    junit = run(*args, "--format", "junit")
    assert junit.code == 4
    root = ET.fromstring(junit.out)
    assert root.tag == "testsuites" and root.get("failures") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {CPU, CUDA}
    failures = [c for c in suites[CPU].findall("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failures] == ["RF-V031 record-hashes"]
    assert int(root.attrib["tests"]) == sum(len(s.findall("testcase")) for s in suites.values())


def test_summary_goes_to_github_step_summary(
    run: Run,
    matrix: Path,
    ext: Callable[[Build], bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dist = tmp_path / "dist"
    _write_wheel(good_spec(ext, "cpu"), dist)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run(
        "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(dist), "--summary"
    )
    assert result.code == 4  # the CUDA wheel is missing
    text = summary.read_text()
    assert "### Validation failed" in text and f"`{CUDA}`" in text and "RF-V100" in text


def test_verdicts_land_in_the_manifest(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    good = _write_wheel(good_spec(ext, "cpu"), dist)
    bad = _write_wheel(good_spec(ext, "cu130", extension=ext(CUDA_BUILD_WITH_RPATH)), dist)
    entries = []
    for cell_id, path, variant in ((CPU, good, "cpu"), (CUDA, bad, "cu130")):
        entries.append(
            ManifestEntry(
                cell_id=cell_id,
                file=f"dist/{path.name}",
                size=path.stat().st_size,
                sha256=sha256_file(path),
                version=VERSION[variant],
                package_type="wheel",
                variant=variant,
                upload_subfolder=variant,
            )
        )
    manifest_path = tmp_path / "relforge-manifest.json"
    ArtifactManifest(project=PROJECT, release="1.0", channel="test").with_entries(entries).save(
        manifest_path
    )
    result = run(
        "validate", str(matrix), "-r", "1.0", "-c", "test", "--manifest", str(manifest_path)
    )
    assert result.code == 4
    manifest = load_manifest(manifest_path)
    assert manifest.entries[CPU].validated
    assert not manifest.entries[CUDA].validated
    assert [v.check for v in manifest.entries[CUDA].failed] == ["RF-V043"]
    assert {v.check for v in manifest.entries[CPU].verdicts} >= {"RF-V040", "RF-V031", "RF-V100"}


def _one_cell_manifest(
    ext: Callable[[Build], bytes],
    tmp_path: Path,
    *,
    channel: str,
    version: str,
    abi3: bool = False,
) -> Path:
    """dist/relforge-manifest.json holding the CPU cell's wheel (of `version`; `abi3`: tagged
    abi3) and the CUDA cell as skipped by its build, as `relforge build` writes them."""
    spec = good_spec(ext, "cpu", version=version, **({"abi_tag": "abi3"} if abi3 else {}))
    wheel = _write_wheel(spec, tmp_path / "dist")
    entry = ManifestEntry(
        cell_id=CPU,
        file=wheel.name,
        size=wheel.stat().st_size,
        sha256=sha256_file(wheel),
        version=version,
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
    )
    path = tmp_path / "dist" / "relforge-manifest.json"
    manifest = ArtifactManifest(project=PROJECT, release="1.0", channel=channel)
    manifest.with_entries([entry]).with_skipped({CUDA: "no Docker image"}).save(path)
    return path


def test_a_manifest_decides_what_is_validated(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """No --release or --channel: the manifest's (a dev build's too: its versions are checked
    against the dev scheme); the cells it holds are validated, the one its build skipped is
    reported as skipped; --whole expects the release's every cell; a conflicting --channel is
    exit 2 with a hint."""
    path = _one_cell_manifest(ext, tmp_path, channel="dev", version="1.0.0.dev0+cpu")
    code, report = run_json(run, "validate", str(matrix), "--manifest", str(path))
    assert code == 0, report
    assert report["channel"] == "dev"
    statuses = {a["subject"]: {v["status"] for v in a["verdicts"]} for a in report["artifacts"]}
    assert statuses[CUDA] == {"skip"} and "fail" not in statuses[CPU]
    [skipped] = [a for a in report["artifacts"] if a["subject"] == CUDA]
    assert "the build skipped this cell: no Docker image" in skipped["verdicts"][0]["message"]
    assert load_manifest(path).entries[CPU].validated

    code, report = run_json(run, "validate", str(matrix), "--manifest", str(path), "--whole")
    assert code == 4 and failing(report, CUDA) == {"RF-V100"} and not failing(report, CPU)

    conflict = run("validate", str(matrix), "-c", "nightly", "--manifest", str(path))
    assert conflict.code == 2 and "Traceback" not in conflict.err
    assert "is for release 1.0 on dev, not 1.0 on nightly" in conflict.err
    assert "drop --channel to take the manifest's (dev)" in conflict.err
    assert "--channel nightly" in conflict.err

    # a wheel of another scheme under a dev manifest fails its version check
    other = _one_cell_manifest(ext, tmp_path / "other", channel="dev", version="1.0.0+cpu")
    code, report = run_json(run, "validate", str(matrix), "--manifest", str(other))
    assert code == 4 and "RF-V013" in failing(report, CPU)


def test_publish_takes_the_manifests_channel_and_refuses_dev(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    path = _one_cell_manifest(ext, tmp_path, channel="dev", version="1.0.0.dev0+cpu")
    assert run("validate", str(matrix), "--manifest", str(path)).code == 0
    refused = run("publish", str(matrix), "--manifest", str(path))
    assert refused.code == 2 and "dev builds" in refused.err
    assert "--channel nightly" in refused.err and "Traceback" not in refused.err
    mismatch = run("publish", str(matrix), "--manifest", str(path), "--channel", "test")
    assert mismatch.code == 2 and "drop --channel" in mismatch.err


def test_a_stale_entry_of_an_abi3_wheel_is_told_to_rebuild_not_to_declare(
    run: Run, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """The matrix declares abi3 now; the manifest still holds the abi3 wheel under the cell of
    one Python (built before).  RF-V101 says to rebuild, not to declare what is declared."""
    floor = PYTHON_TAG.removeprefix("cp")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        MATRIX.replace("        kind: cpu\n", f'        kind: cpu\n        abi3: "{PYTHON}"\n', 1)
    )
    path = _one_cell_manifest(ext, tmp_path, channel="test", version=VERSION["cpu"], abi3=True)
    code, report = run_json(run, "validate", str(matrix), "--manifest", str(path))
    assert code == 4
    [stray] = [a for a in report["artifacts"] if a["cell_id"] is None]
    [extra] = [v for v in stray["verdicts"] if v["check"] == "RF-V101"]
    assert (
        f"wheel-linux-x86_64-cp{floor}-abi3-cpu builds its cp{floor}-abi3 wheel now"
        in (extra["message"])
    )
    assert "declare" not in extra["message"]


def test_a_dev_builds_folder_validates_on_dev_and_says_so_on_another_channel(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """`--dist` of a dev build: `--channel dev` checks it on the dev scheme; the default channel
    (nightly) reports the file as extra, naming the cell whose tags it has and the fix."""
    path = _one_cell_manifest(ext, tmp_path, channel="dev", version="1.0.0.dev0+cpu")
    dist = ("--dist", str(path.parent), "--select", "variant=cpu")
    code, report = run_json(run, "validate", str(matrix), "-r", "1.0", "-c", "dev", *dist)
    assert code == 0, report
    code, report = run_json(run, "validate", str(matrix), "-r", "1.0", *dist)
    assert code == 4
    [stray] = [a for a in report["artifacts"] if a["cell_id"] is None]
    [extra] = [v["message"] for v in stray["verdicts"] if v["check"] == "RF-V101"]
    assert f"it has cell {CPU}'s tags but version 1.0.0.dev0+cpu" in extra
    assert "validate with the --channel it was built for" in extra


def test_wheel_inspect_good_and_self_contradicting(
    run: Run, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    good = _write_wheel(good_spec(ext, "cu130"), tmp_path / "good")
    result = run("wheel", "inspect", str(good), "--format", "json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert found["tags"] == [
        f"cp{PYTHON.replace('.', '')}-cp{PYTHON.replace('.', '')}-manylinux_2_28_x86_64"
    ]
    assert found["symbol_version_ceiling"].startswith("manylinux_2_")
    assert found["cxx_abi"] == "cxx11"
    assert found["external_libraries"]["libcudart.so.13"]["status"].startswith(
        "declared by nvidia-cuda-runtime==13.0.48"
    )
    others = {k: v["status"] for k, v in found["external_libraries"].items()}
    del others["libcudart.so.13"]
    assert set(others.values()) <= {"allowed"}, others
    table = run("wheel", "inspect", str(good))
    assert table.code == 0 and "libcudart.so.13" in table.out and "manylinux_2_" in table.out

    bad = _write_wheel(good_spec(ext, "cpu", extension=ext(Build(threads=True))), tmp_path / "bad")
    result = run("wheel", "inspect", str(bad), "--format", "json")
    assert result.code == 4
    found = json.loads(result.out)
    assert found["symbol_version_ceiling"] == "manylinux_2_34"
    assert found["highest_versions"]["GLIBC"] == "2.34"
    assert found["external_libraries"]["libc.so.6"]["status"] == "allowed"
    assert "RF-V040" in result.err and "GLIBC_2.34" in result.err


def test_wheel_inspect_bad_input(run: Run, tmp_path: Path) -> None:
    missing = run("wheel", "inspect", str(tmp_path / "nope.whl"))
    assert missing.code == 2 and "no such file" in missing.err
    folder = run("wheel", "inspect", str(tmp_path))
    assert folder.code == 2 and "a directory, not a wheel file" in folder.err
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip")
    result = run("wheel", "inspect", str(junk))
    assert result.code == 4 and "not a zip archive" in result.err and "Traceback" not in result.err


def test_validate_usage_errors(run: Run, matrix: Path, tmp_path: Path) -> None:
    neither = run("validate", str(matrix), "-r", "1.0", "-c", "test")
    assert neither.code == 2 and "exactly one of" in neither.err
    nodir = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(tmp_path / "x"))
    assert nodir.code == 2 and "not a directory" in nodir.err
    for flag, value in (("--size-limit-mb", "0"), ("--size-limit-mb", "-5"), ("--jobs", "0")):
        bad = run(
            "validate", str(matrix), "-r", "1.0", "-c", "test", "--dist", str(tmp_path), flag, value
        )
        assert bad.code == 2 and flag in bad.err, (flag, value)


@contextlib.contextmanager
def http_server(root: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/simple"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_runtime_from_a_local_index(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    good = _write_wheel(good_spec(ext, "cpu"), tmp_path / "built")
    serve_index(tmp_path / "index", PROJECT, [good])
    with http_server(tmp_path / "index") as url:
        code, report = run_json(
            run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--index", url,
            "--runtime", "--select", "variant=cpu",
        )  # fmt: skip
    assert code == 0, report
    [cpu] = report["artifacts"]
    status = {v["check"]: (v["status"], v["message"]) for v in cpu["verdicts"]}
    assert status["RF-V104"][0] == "pass"
    assert status["RF-R001"][0] == "pass" and url in status["RF-R001"][1]
    assert status["RF-R002"][0] == "pass" and "1.0.0+cpu" in status["RF-R002"][1]
    assert status["RF-R005"] == ("pass", "demo_ext.__version__ is 1.0.0+cpu")
    assert status["RF-R003"] == ("pass", status["RF-R003"][1])
    assert "variant=cpu" in status["RF-R003"][1] and "cxx11_abi=True" in status["RF-R003"][1]
    assert status["RF-R004"] == ("skip", "a cpu cell")


def test_runtime_catches_build_info_from_another_cell(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    wrong = good_spec(ext, "cpu", extension=ext(Build(variant="cu130", accelerator="cuda")))
    wheel = _write_wheel(wrong, tmp_path / "built")
    serve_index(tmp_path / "index", PROJECT, [wheel], with_hash=False)
    with http_server(tmp_path / "index") as url:
        code, report = run_json(
            run, "validate", str(matrix), "-r", "1.0", "-c", "test", "--index", url,
            "--runtime", "--select", "variant=cpu",
        )  # fmt: skip
    assert code == 4
    # the CUDA build's device code says so before it runs (RF-V048), build_info() when it does
    assert failing(report, CPU) == {"RF-R003", "RF-V048", "RF-V104"}
    [cpu] = report["artifacts"]
    [info] = [v for v in cpu["verdicts"] if v["check"] == "RF-R003"]
    assert "variant is 'cu130', the cell says 'cpu'" in info["message"]
    [device] = [v for v in cpu["verdicts"] if v["check"] == "RF-V048"]
    assert device["message"].startswith("a cpu cell carrying device code: demo_ext/")
    assert device["message"].endswith("SASS sm_80, sm_90")


def test_select_leaves_the_other_cells_artifacts_alone(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """--select validates the selected cells; the release's other artifacts (in the folder or
    the manifest) are neither checked nor reported as strays, and keep their verdicts."""
    dist = tmp_path / "dist"
    good = _write_wheel(good_spec(ext, "cpu"), dist)
    bad = _write_wheel(good_spec(ext, "cu130", extension=ext(CUDA_BUILD_WITH_RPATH)), dist)
    base = ("validate", str(matrix), "-r", "1.0", "-c", "test", "--select", "accelerator=cpu")
    code, report = run_json(run, *base, "--dist", str(dist))
    assert code == 0, report
    assert [a["subject"] for a in report["artifacts"]] == [CPU]
    entries = [
        ManifestEntry(
            cell_id=cell_id,
            file=f"dist/{path.name}",
            size=path.stat().st_size,
            sha256=sha256_file(path),
            version=VERSION[variant],
            package_type="wheel",
            variant=variant,
            upload_subfolder=variant,
        )
        for cell_id, path, variant in ((CPU, good, "cpu"), (CUDA, bad, "cu130"))
    ]
    manifest_path = tmp_path / "relforge-manifest.json"
    ArtifactManifest(project=PROJECT, release="1.0", channel="test").with_entries(entries).save(
        manifest_path
    )
    code, report = run_json(run, *base, "--manifest", str(manifest_path))
    assert code == 0, report
    assert [a["subject"] for a in report["artifacts"]] == [CPU]
    manifest = load_manifest(manifest_path)
    assert manifest.entries[CPU].validated
    assert manifest.entries[CUDA].verdicts == ()
    code, report = run_json(run, *base[:-1], "accelerator=cuda", "--manifest", str(manifest_path))
    assert code == 4 and failing(report, CUDA) == {"RF-V043"}


def test_wheels_bound_for_pypi_share_their_metadata(
    run: Run, tmp_path: Path, ext: Callable[[Build], bytes]
) -> None:
    """RF-V103: the PyPI default variant's wheels (one per Python) show one project page."""
    other = "3.10" if PYTHON != "3.10" else "3.12"
    pythons = sorted([PYTHON, other], key=lambda v: tuple(map(int, v.split("."))))
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX.replace(f'python: ["{PYTHON}"]', f"python: {json.dumps(pythons)}"))
    specifier = f">={pythons[0]}"
    cells = {v: f"wheel-linux-x86_64-py{v}-cpu" for v in pythons}

    def wheels(dist: Path, **changes: object) -> None:
        for version in pythons:
            tag = "cp" + version.replace(".", "")
            spec = good_spec(ext, "cpu", python_tag=tag, abi_tag=tag, requires_python=specifier)
            for key, value in (changes if version == pythons[-1] else {}).items():
                setattr(spec, key, value)
            _write_wheel(spec, dist)

    args = ("validate", str(matrix), "-r", "1.0", "-c", "test", "-s", "accelerator=cpu")
    wheels(tmp_path / "same")
    code, report = run_json(run, *args, "--dist", str(tmp_path / "same"))
    assert code == 0, report
    verdicts = [v for a in report["artifacts"] for v in a["verdicts"] if v["check"] == "RF-V103"]
    assert [v["status"] for v in verdicts] == ["pass", "pass"]
    wheels(tmp_path / "differ", requires_dist=["numpy>=1.26"])
    code, report = run_json(run, *args, "--dist", str(tmp_path / "differ"))
    assert code == 4
    assert failing(report, cells[pythons[-1]]) == {"RF-V103"}
    assert failing(report, cells[pythons[0]]) == set()


def test_an_elf_read_that_fails_from_a_tail_is_read_again_exactly(
    ext: Callable[[Build], bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offsets read from wrong tail bytes can point past the member's end: like a parse error,
    that must send the reader back to the exact path, not mark the ELF file unreadable."""
    from relforge.validate import wheelreader as wheel_module
    from relforge.validate.inflate import MemberError
    from relforge.validate.inspect import inspect_wheel
    from relforge.validate.streams import ByteSource
    from relforge.validate.wheelreader import Member, WheelArchive

    good = _write_wheel(good_spec(ext, "cpu"), tmp_path)
    exact_source = wheel_module.WheelArchive.source

    class PastTheEnd:
        """A source whose far reads fail as a wrong tail's would."""

        def __init__(self, inner: ByteSource) -> None:
            self.inner = inner
            self.size = inner.size
            self.guessed = True  # as a source that served bytes from a tail

        def set_interest(self, spans: Sequence[tuple[int, int]]) -> None:
            self.inner.set_interest(spans)

        def read(self, offset: int, length: int) -> bytes:
            if offset > 4096:
                raise MemberError(f"read of {length} bytes at {offset} is past the end")
            return self.inner.read(offset, length)

        def read_forward(self, offset: int, length: int) -> bytes:
            return self.read(offset, length)

    def source(self: WheelArchive, member: Member, *, exact: bool = False) -> ByteSource:
        found = exact_source(self, member, exact=exact)
        return found if exact else PastTheEnd(found)

    monkeypatch.setattr(wheel_module.WheelArchive, "source", source)
    found = inspect_wheel(good)
    [elf] = found.facts.elves
    assert elf.error is None and elf.info is not None and elf.info.cxx.cxx11_defined


def test_a_malformed_elf_read_exactly_is_not_read_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact re-read is for bytes that came from a searched tail: an ELF file whose bytes
    were all read exactly is malformed as it stands (re-reading a 3 GiB member costs seconds)."""
    from relforge.validate import wheelreader as wheel_module
    from relforge.validate.inspect import inspect_wheel
    from relforge.validate.streams import ByteSource
    from relforge.validate.wheelreader import Member, WheelArchive

    header = struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 1 << 20, 0, 0, 64, 56, 1, 64, 0, 0)
    broken = b"\x7fELF\x02\x01\x01" + bytes(9) + header + bytes(200)  # phdrs past the end
    wheel = _write_wheel(WheelSpec(version="1.0.0+cpu", extension=broken), tmp_path)
    exact_source = wheel_module.WheelArchive.source
    asked: list[bool] = []

    def source(self: WheelArchive, member: Member, *, exact: bool = False) -> ByteSource:
        if member.name.endswith(".so"):
            asked.append(exact)
        return exact_source(self, member, exact=exact)

    monkeypatch.setattr(wheel_module.WheelArchive, "source", source)
    [elf] = inspect_wheel(wheel).facts.elves
    assert elf.error is not None and elf.info is None
    assert asked == [False]


def test_nightly_versions_are_dated_by_the_manifest(
    run: Run, matrix: Path, ext: Callable[[Build], bytes], tmp_path: Path
) -> None:
    """A nightly built before midnight (UTC) and validated after it: the expected versions carry
    the build's date from the manifest, not the day validation runs."""
    version = "1.0.0.dev20260101+cpu"
    wheel = _write_wheel(good_spec(ext, "cpu", version=version), tmp_path / "dist")
    entry = ManifestEntry(
        cell_id=CPU,
        file=f"dist/{wheel.name}",
        size=wheel.stat().st_size,
        sha256=sha256_file(wheel),
        version=version,
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
    )
    manifest_path = tmp_path / "relforge-manifest.json"
    ArtifactManifest(project=PROJECT, release="1.0", channel="nightly").with_entries([entry]).save(
        manifest_path
    )
    args = ("validate", str(matrix), "-r", "1.0", "-c", "nightly", "-s", "accelerator=cpu")
    code, report = run_json(run, *args, "--manifest", str(manifest_path))
    assert code == 0, report
    code, report = run_json(run, *args, "--manifest", str(manifest_path), "--date", "2026-01-02")
    assert code == 4 and failing(report, CPU) == {"RF-V100", "RF-V013"}
