"""Host builds of the example project for real: compile (nvcc for CUDA cells), wheel, repair,
install into a fresh venv, import, and compare build_info() with the cell."""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.interpreters import find_interpreter
from relforge.manifest import load_manifest, sha256_file
from tests.conftest import Result
from tests.integration.example_project import SOURCE, example_matrix, installed_build_info

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

CPU = "wheel-linux-x86_64-py3.10-cpu"
CUDA = "wheel-linux-x86_64-py3.13-cu130"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def build(run: Run, matrix: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = run(
        "build", str(matrix), "--release", "1.0", "--builder", "host", "--format", "json", *args
    )
    data = json.loads(result.out) if result.out.strip() else {}
    return result, {c["cell"]: c for c in data.get("cells", [])}


def test_cells_build_install_and_report_their_build(run: Run, workdir: Path) -> None:
    matrix = example_matrix(workdir)
    result, cells = build(
        run, matrix, "--channel", "dev", "--cell", CPU, "--cell", CUDA, "--jobs", "2"
    )
    assert result.code == 0, result.err
    assert {c: cells[c]["status"] for c in cells} == {CPU: "built", CUDA: "built"}
    # piped: a line as each cell enters a step, `[N/2] CELL: STEP (S s)`
    for step in ("resolving build requirements", "pip wheel", "repair (auditwheel)", "stamping"):
        for cell in (CPU, CUDA):
            assert f"/2] {cell}: {step} (" in result.err, result.err

    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert (manifest.project, manifest.release, manifest.channel) == ("hello-native", "1.0", "dev")
    expected = {
        CPU: ("1.0.0.dev0+cpu", "cp310-cp310-manylinux_2_28_x86_64", None),
        CUDA: ("1.0.0.dev0+cu130", "cp313-cp313-manylinux_2_34_x86_64", "13.0"),
    }
    for cell_id, (version, tags, cuda) in expected.items():
        entry = manifest.entries[cell_id]
        wheel = workdir / "dist" / entry.file
        assert entry.file == f"hello_native-{version}-{tags}.whl"
        assert (entry.size, entry.sha256) == (wheel.stat().st_size, sha256_file(wheel))
        assert entry.build["builder"] == "host" and entry.build["cached"] is False
        assert (workdir / ".relforge" / "logs" / f"{cell_id}.log").is_file()
        python = find_interpreter(entry.python or "")
        assert python is not None
        info = installed_build_info(python.executable, wheel, workdir / f"venv-{cell_id}")
        assert info["variant"] == entry.variant
        assert info["cuda"] == cuda
        assert info["cxx11_abi"] is True
        assert info["version"] == version
        assert info["dot"] == 11.0

    # Nothing changed: both cells come from the cache, and the manifest says so.
    (workdir / "dist" / manifest.entries[CPU].file).unlink()
    again, cells = build(run, matrix, "--channel", "dev", "--cell", CPU, "--cell", CUDA)
    assert again.code == 0, again.err
    assert {c: cells[c]["status"] for c in cells} == {CPU: "cached", CUDA: "cached"}
    assert f"/2] {CPU}: cached (" in again.err and f"{CPU}: pip wheel" not in again.err
    rerun = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert rerun.entries[CPU].sha256 == manifest.entries[CPU].sha256
    assert rerun.entries[CPU].build["cached"] is True
    assert (workdir / "dist" / rerun.entries[CPU].file).is_file()  # restored from the cache

    # A build of one cell merges into the manifest; it does not drop the other entries.
    single, _ = build(run, matrix, "--channel", "dev", "--cell", CPU)
    assert single.code == 0, single.err
    merged = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert sorted(merged.entries) == sorted([CPU, CUDA])


def test_build_validate_publish_with_no_channel_then_a_dev_build(run: Run, workdir: Path) -> None:
    """No --channel anywhere: build targets the matrix's default channel (nightly), validate
    and publish take the manifest's.  A dev build into the same folder then replaces the
    manifest, keeping the validated nightly one beside it, and validates on its own scheme."""
    matrix = example_matrix(workdir)
    result, cells = build(run, matrix, "--cell", CPU)
    assert result.code == 0, result.err
    assert cells[CPU]["status"] == "built"
    manifest = workdir / "dist" / "relforge-manifest.json"
    nightly = load_manifest(manifest)
    assert nightly.channel == "nightly" and ".dev2" in nightly.entries[CPU].version
    checked = run("validate", str(matrix), "--manifest", str(manifest))
    assert checked.code == 0, checked.out + checked.err
    published = run("publish", str(matrix), "--manifest", str(manifest), "--partial", "--execute")
    assert published.code == 0, published.err
    store = workdir / ".relforge" / "store" / "whl" / "nightly" / "cpu"
    assert [p.name for p in store.glob("*.whl")] == [nightly.entries[CPU].file]

    validated = load_manifest(manifest)
    dev, _ = build(run, matrix, "--channel", "dev", "--cell", CPU)
    assert dev.code == 0, dev.err
    assert (
        "(replaces its manifest of 1.0 on nightly, kept as relforge-manifest.1.0-nightly.json)"
        in (dev.err)
    )
    assert (
        "note: replaced dist/relforge-manifest.json (hello-native 1.0 on nightly): its validated "
        "entries (1) are kept, with their files, in dist/relforge-manifest.1.0-nightly.json"
    ) in dev.err
    kept = load_manifest(workdir / "dist" / "relforge-manifest.1.0-nightly.json")
    assert kept == validated and kept.entries[CPU].validated
    assert (workdir / "dist" / nightly.entries[CPU].file).is_file()
    assert load_manifest(manifest).entries[CPU].version == "1.0.0.dev0+cpu"
    checked = run("validate", str(matrix), "--manifest", str(manifest))
    assert checked.code == 0, checked.out + checked.err
    assert load_manifest(manifest).entries[CPU].validated


def test_one_failing_cell_does_not_stop_the_others(run: Run, workdir: Path) -> None:
    """py3.11 breaks on purpose; py3.12 still builds, and declares the cell's requirements."""
    broken = (
        'if [ "$DESIRED_PYTHON" = 3.11 ]; then echo deliberately broken >&2; exit 3; fi; '
        "exec python -m pip wheel --no-deps --no-build-isolation --no-index "
        '--wheel-dir "$RELFORGE_OUTPUT_DIR" .'
    )
    matrix = example_matrix(
        workdir,
        {
            "    command: []": f"    command: [sh, -c, {json.dumps(broken)}]",
            "      cpu:\n        kind: cpu\n": "      cpu:\n        kind: cpu\n"
            "        extra_install_requires: [\"packaging>=20; python_version >= '3.8'\"]\n",
        },
    )
    ok, bad = "wheel-linux-x86_64-py3.12-cpu", "wheel-linux-x86_64-py3.11-cpu"
    result, cells = build(run, matrix, "--cell", bad, "--cell", ok, "--jobs", "1")
    assert result.code == 4, result.err
    assert f"build failed: 1 of 2 cells failed: {bad}\n  {bad}: deliberately broken\n" in result.err
    assert f"    log: .relforge/logs/{bad}.log" in result.err
    # piped (not a terminal): a line as each cell enters a step of its build
    for cell, number in ((bad, 1), (ok, 2)):
        for step in ("resolving build requirements", "build command"):
            assert f"[{number}/2] {cell}: {step} (" in result.err, result.err
    assert f"[2/2] {ok}: stamping (" in result.err
    assert f"{bad}: stamping" not in result.err
    assert cells[bad]["status"] == "failed" and "exited with code 3" in cells[bad]["reason"]
    assert "deliberately broken" in Path(cells[bad]["log"]).read_text()
    assert cells[ok]["status"] == "built"
    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert list(manifest.entries) == [ok]
    with zipfile.ZipFile(workdir / "dist" / manifest.entries[ok].file) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(name).decode()
    assert "Requires-Dist: packaging>=20; python_version >= '3.8'" in metadata
    assert manifest.entries[ok].build["requires_dist_added"] == [
        "packaging>=20; python_version >= '3.8'"
    ]


def test_a_failed_rebuild_drops_the_cells_earlier_artifact(run: Run, workdir: Path) -> None:
    """The manifest must not keep offering (for validation, publishing) what an earlier build of
    a cell made once its build from the current input failed."""
    cell = "wheel-linux-x86_64-py3.12-cpu"
    good = example_matrix(workdir)
    result, cells = build(run, good, "--cell", cell)
    assert result.code == 0, result.err
    earlier = Path(cells[cell]["file"])
    assert earlier.is_file()
    broken = example_matrix(workdir, {"    command: []": "    command: [sh, -c, 'exit 3']"})
    result, cells = build(run, broken, "--cell", cell)
    assert result.code == 4 and cells[cell]["status"] == "failed"
    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert cell not in manifest.entries
    assert not earlier.exists()
    # the failure poisoned nothing: the good input still comes from the cache
    result, cells = build(run, example_matrix(workdir), "--cell", cell)
    assert result.code == 0 and cells[cell]["status"] == "cached"
    assert earlier.is_file()


def test_a_wheel_that_cannot_take_the_cells_platform_tag_fails(run: Run, workdir: Path) -> None:
    """Built on glibc 2.36 with a newer libstdc++, the extension is no manylinux_2_17 wheel."""
    matrix = example_matrix(
        workdir, {"platform_tag: manylinux_2_28_x86_64": "platform_tag: manylinux_2_17_x86_64"}
    )
    cell = "wheel-linux-x86_64-py3.12-cpu"
    result, cells = build(run, matrix, "--cell", cell)
    assert result.code == 4
    assert cells[cell]["status"] == "failed"
    assert "auditwheel repair exited" in cells[cell]["reason"]
    assert "manylinux_2_17" in Path(cells[cell]["log"]).read_text()
    assert not list((workdir / "dist").glob("*.whl"))


def test_an_interrupt_stops_every_running_build(workdir: Path) -> None:
    """Ctrl-C kills the builds' process groups (compilers included) and removes scratch."""
    # A sleep no other test run on this machine uses, so pgrep below sees only ours.
    sleep = f"sleep 120.{secrets.randbelow(10**6):06d}"
    matrix = example_matrix(workdir, {"    command: []": f"    command: [sh, -c, '{sleep}']"})
    argv = [str(Path(sys.executable).parent / "relforge"), "build", str(matrix), "-r", "1.0"]
    argv += ["--builder", "host", "--jobs", "2"]
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    logs = workdir / ".relforge" / "logs"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sleep.encode() not in b"".join(
        p.read_bytes() for p in logs.glob("*.log")
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, out.decode()
    sleeping = subprocess.run(["pgrep", "-f", sleep], capture_output=True, text=True)
    assert sleeping.stdout == ""
    assert list((workdir / ".relforge" / "work").iterdir()) == []
    assert not (workdir / "dist" / "relforge-manifest.json").exists()


def test_cells_the_host_cannot_build_are_skipped_with_the_reason(run: Run, workdir: Path) -> None:
    extra = (
        "    accelerators:\n"
        "      rocm6.4:\n"
        "        kind: rocm\n"
        "        version: '6.4'\n"
        "        platforms:\n"
        "          linux-x86_64: {}\n"
        "      cu129:\n"
        "        kind: cuda\n"
        "        version: 12.9.1\n"
        "        platforms:\n"
        "          linux-x86_64: {}\n"
    )
    matrix = example_matrix(workdir, {"    accelerators:\n": extra})
    result, cells = build(run, matrix, "--select", "python=3.12,variant=rocm6.4|cu129")
    assert result.code == 3, result.err  # nothing was built: every cell was skipped
    assert {c["status"] for c in cells.values()} == {"skipped"}
    reasons = {c: cells[c]["reason"] for c in cells}
    assert reasons["wheel-linux-x86_64-py3.12-rocm6.4"].startswith("no ROCm toolchain (hipcc)")
    assert reasons["wheel-linux-x86_64-py3.12-cu129"].startswith("no nvcc for CUDA 12.9")
    assert "13.0" in reasons["wheel-linux-x86_64-py3.12-cu129"]  # what the host does have
    assert not (workdir / "dist" / "relforge-manifest.json").exists()  # no empty manifest


def test_a_run_that_stopped_on_an_error_does_not_leave_later_runs_interrupted(
    run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that stops on an exception cancels its other builds; the next run in the same
    process (the bot, a library user, a test) must not find itself interrupted."""
    import errno

    from relforge.builders import executor
    from relforge.builders.control import cancel

    matrix = example_matrix(workdir)

    def disk_full(self: object, cell: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(executor._Run, "cell", disk_full)
        failed = run("build", str(matrix), "--release", "1.0", "--builder", "host")
    assert failed.code == 6, failed.out + failed.err  # an environment fault, no traceback
    assert "Traceback" not in failed.err
    assert not cancel.requested()


def test_a_matrix_and_out_folder_inside_the_source_keep_the_cache(
    run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The field case: the matrix lives in the project, `--out` points inside it.  A comment in
    the matrix, or a second build into the same folder, is a cache hit; a source edit is not."""
    project = workdir / "project"
    shutil.copytree(SOURCE, project)
    matrix = example_matrix(project, {f"source: {SOURCE}": "source: ."})
    monkeypatch.chdir(project)  # .relforge/ inside the source too
    first, cells = build(run, matrix, "--cell", CPU, "--out", "out")
    assert first.code == 0, first.err
    assert cells[CPU]["status"] == "built"
    again, cells = build(run, matrix, "--cell", CPU, "--out", "out")
    assert cells[CPU]["status"] == "cached", again.err
    matrix.write_text("# hello-native's matrix\n" + matrix.read_text())
    commented, cells = build(run, matrix, "--cell", CPU, "--out", "out")
    assert cells[CPU]["status"] == "cached", commented.err
    (project / "README.md").write_text("changed\n")
    edited, cells = build(run, matrix, "--cell", CPU, "--out", "out")
    assert cells[CPU]["status"] == "built", edited.err
