"""GPU truth on a machine without a GPU: the example's CUDA cell built for real by nvcc with a
narrower arch list than the cell declares must fail the device-code audit (RF-V048) naming
what it lacks; on stand-in GPUs (an `nvidia-smi` on PATH reporting a compute capability), the
runtime verdict predicts whether the wheel's code can run there (RF-R004) before anything runs,
and the GPU smoke command is bounded by its timeout (RF-R006); its GPUs are recorded as proven.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from relforge.manifest import load_manifest
from tests.conftest import Run
from tests.integration.example_project import example_matrix

pytestmark = pytest.mark.slow

CELL = "wheel-linux-x86_64-py3.12-cu130"
DECLARED = 'arch_list: ["7.5", "8.0", "9.0", "12.0+PTX"]'
GPU_SMOKE = 'gpu_smoke: [python, -c, "import hello_native; print(hello_native.gpu_check())"]'


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cu130 py3.12 cell built on the host with SASS for 8.0 only (the matrix the build
    read says `arch_list: ["8.0"]`), into work/dist with its manifest (nightly)."""
    work = tmp_path_factory.mktemp("gpu-truth")
    narrow = example_matrix(work, {DECLARED: 'arch_list: ["8.0"]'})
    done = subprocess.run(
        [sys.executable, "-m", "relforge", "build", str(narrow), "--release", "1.0",
         "--builder", "host", "--cell", CELL, "--channel", "nightly", "--format", "json"],
        cwd=work, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return work


def matrix(work: Path, name: str, replacements: dict[str, str] | None = None) -> Path:
    folder = work / name
    folder.mkdir(exist_ok=True)
    return example_matrix(folder, replacements)


def stand_in_gpu(folder: Path, line: str) -> Path:
    """A folder holding an `nvidia-smi` that answers the query as a real one would."""
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{line}'\n", encoding="utf-8")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return folder


def validate(run: Run, matrix_path: Path, work: Path, *args: str) -> dict[str, Any]:
    result = run(
        "validate", str(matrix_path), "--release", "1.0", "--select", CELL,
        "--format", "json", *args,
    )  # fmt: skip
    assert result.code in (0, 4), result.err
    report: dict[str, Any] = json.loads(result.out)
    return report


def verdicts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (artifact,) = [a for a in report["artifacts"] if a["cell_id"] == CELL]
    return {v["check"]: v for v in artifact["verdicts"]}


def test_a_narrower_arch_list_than_declared_fails_the_audit(built: Path, run: Run) -> None:
    declared = matrix(built, "declared")
    got = verdicts(validate(run, declared, built, "--dist", str(built / "dist")))
    audit = got["RF-V048"]
    assert audit["status"] == "fail"
    assert "hello_native/_core" in audit["message"]
    assert "lacks sm_75, sm_90, sm_120, compute_120" in audit["message"]
    assert "carries SASS sm_80" in audit["message"]

    # The same wheel against the list it was built with passes.
    narrow = matrix(built, "narrow", {DECLARED: 'arch_list: ["8.0"]'})
    got = verdicts(validate(run, narrow, built, "--dist", str(built / "dist")))
    assert got["RF-V048"]["status"] == "pass", got["RF-V048"]

    # A cell that says CPU for the same bytes fails the other way round.
    wheel = next((built / "dist").glob("*.whl"))
    shown = run("wheel", "inspect", str(wheel), "--format", "json")
    files = json.loads(shown.out)["elf_files"]
    (core,) = [f for f in files if f.get("device_code")]
    assert core["device_code"]["sass"] == ["sm_80"]
    assert core["device_code"]["ptx"] == []
    text = run("wheel", "inspect", str(wheel))
    assert "device code" in text.out and "sm_80" in text.out


@pytest.mark.parametrize(
    ("smi", "status", "said"),
    [
        ("0, NVIDIA H200, 9.0, 580.159.04", "fail", "no kernel image for NVIDIA H200 (sm_90)"),
        ("0, NVIDIA RTX 5090, 12.0, 580.65.06", "fail", "(sm_120)"),
        ("0, NVIDIA A10, 8.6, 580.65.06", "pass", "SASS sm_80"),
        ("0, NVIDIA A100, 8.0, 535.104.05", "fail", "too old for CUDA 13.0"),
    ],
)
def test_the_gpu_verdict_predicts_whether_the_code_can_run(
    built: Path,
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    smi: str,
    status: str,
    said: str,
) -> None:
    declared = matrix(built, "declared")
    bin_dir = stand_in_gpu(tmp_path / "bin", smi)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    got = verdicts(validate(run, declared, built, "--dist", str(built / "dist"), "--runtime"))
    assert got["RF-R001"]["status"] == "pass", got["RF-R001"]
    assert got["RF-R004"]["status"] == status, got["RF-R004"]
    assert said in got["RF-R004"]["message"]
    # No real GPU behind the stand-in: the kernel cannot run, and the smoke says so truthfully.
    assert got["RF-R006"]["status"] == "fail"
    assert "cudaError" in got["RF-R006"]["message"]


def test_without_a_gpu_the_gpu_checks_skip_unless_one_is_required(
    built: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = matrix(built, "declared")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}{os.pathsep}/usr/bin:/bin")
    dist = str(built / "dist")
    got = verdicts(validate(run, declared, built, "--dist", dist, "--runtime"))
    assert got["RF-R004"]["status"] == "skip"
    assert got["RF-R006"]["status"] == "skip"
    required = verdicts(
        validate(run, declared, built, "--dist", dist, "--runtime", "--require-gpu")
    )
    assert required["RF-R004"]["status"] == "fail"
    assert "--require-gpu" in required["RF-R004"]["message"]
    assert required["RF-R006"]["status"] == "fail"
    static = run("validate", str(declared), "--release", "1.0", "--dist", dist, "--require-gpu")
    assert static.code == 2 and "--require-gpu asks for the GPU checks" in static.err


def test_the_gpu_smoke_is_bounded_and_what_ran_is_recorded(
    built: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = stand_in_gpu(tmp_path / "bin", "0, NVIDIA A10, 8.6, 580.65.06")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    manifest = str(built / "dist" / "relforge-manifest.json")

    hangs = matrix(
        built,
        "hangs",
        {GPU_SMOKE: 'gpu_smoke: [python, -c, "import time; time.sleep(60)"]\n'
                    "    gpu_smoke_timeout: 2"},
    )  # fmt: skip
    got = verdicts(validate(run, hangs, built, "--manifest", manifest, "--runtime"))
    assert got["RF-R006"]["status"] == "fail"
    assert "hung on NVIDIA A10 (sm_86): no exit within 2 s" in got["RF-R006"]["message"]
    assert load_manifest(Path(manifest)).entries[CELL].proven_on == ()

    runs = matrix(
        built,
        "runs",
        {GPU_SMOKE: "gpu_smoke: [python, -c, "
                    '"import os; print(os.environ[\'CUDA_VISIBLE_DEVICES\'])"]'},
    )  # fmt: skip
    report = validate(run, runs, built, "--manifest", manifest, "--runtime")
    got = verdicts(report)
    assert got["RF-R006"]["status"] == "pass", got["RF-R006"]
    assert "a kernel ran on NVIDIA A10 (sm_86): 0" in got["RF-R006"]["message"]
    (artifact,) = [a for a in report["artifacts"] if a["cell_id"] == CELL]
    assert artifact["proven_on"] == [{"name": "NVIDIA A10", "sm": "sm_86"}]
    entry = load_manifest(Path(manifest)).entries[CELL]
    assert [(g.name, g.sm) for g in entry.proven_on] == [("NVIDIA A10", "sm_86")]
