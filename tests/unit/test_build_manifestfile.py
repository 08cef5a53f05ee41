"""The build owns the manifest of its output folder: merge, replace (keeping validated work),
drop the entries of cells the matrix no longer has, record skipped cells, remove stale files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from relforge.builders import BuildPlan, BuildRequest, CellResult, plan_build, write_manifest
from relforge.errors import RefusedError
from relforge.manifest import ArtifactManifest, ManifestEntry, Verdict, load_manifest
from relforge.matrix import Cell
from tests.conftest import EXAMPLE

CPU = "wheel-linux-x86_64-py3.12-cpu"
CUDA = "wheel-linux-x86_64-py3.12-cu130"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "dist").mkdir()
    return tmp_path


def plan(workdir: Path, channel: str = "dev") -> BuildPlan:
    from relforge.matrix import load_matrix

    assert channel in ("dev", "nightly")
    return plan_build(
        BuildRequest(
            matrix=load_matrix(EXAMPLE),
            matrix_file=str(EXAMPLE),
            release="1.0",
            channel="dev" if channel == "dev" else "nightly",
            cell_ids=(CPU, CUDA),
            source=workdir / "src",
            out=workdir / "dist",
            state=workdir / ".relforge",
        )
    )


def entry(cell_id: str, file: str, *, version: str = "1.0.0.dev0+cpu") -> ManifestEntry:
    return ManifestEntry(
        cell_id=cell_id,
        file=file,
        size=1,
        sha256="ab" * 32,
        version=version,
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
    )


def built(the_plan: BuildPlan, cell_id: str, file: str) -> CellResult:
    (the_plan.out / file).write_bytes(b"w")
    cell = next(c for c in the_plan.cells if c.id == cell_id)
    return CellResult(cell=cell, status="built", builder="host", entry=entry(cell_id, file))


def cell_of(the_plan: BuildPlan, cell_id: str) -> Cell:
    return next(c for c in the_plan.cells if c.id == cell_id)


def previous(workdir: Path, manifest: ArtifactManifest, *files: str) -> None:
    for name in files:
        (workdir / "dist" / name).write_bytes(b"old")
    manifest.save(workdir / "dist" / "relforge-manifest.json")


def test_another_channels_manifest_is_replaced_and_its_files_removed(workdir: Path) -> None:
    old = ArtifactManifest(project="hello-native", release="1.0", channel="nightly")
    previous(workdir, old.with_entries([entry(CPU, "old.whl")]), "old.whl")
    the_plan = plan(workdir)
    written = write_manifest(the_plan, [built(the_plan, CPU, "new.whl")])
    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert (manifest.channel, list(manifest.entries)) == ("dev", [CPU])
    assert written.notes == (
        "replaced dist/relforge-manifest.json (hello-native 1.0 on nightly): removed its "
        "entries (1) and their files",
    )
    assert sorted(p.name for p in (workdir / "dist").iterdir()) == [
        "new.whl",
        "relforge-manifest.json",
    ]


def test_a_replaced_manifest_with_validated_entries_is_kept(workdir: Path) -> None:
    """Validated work is never thrown away: the old manifest is kept beside the new one, with
    its files; when that name is taken, the build is refused before anything is built."""
    passed = (Verdict(check="RF-V010", status="pass"),)
    validated = dataclasses.replace(entry(CPU, "old.whl"), verdicts=passed)
    old = ArtifactManifest(project="hello-native", release="1.0", channel="nightly")
    old = old.with_entries([validated])
    previous(workdir, old, "old.whl")
    the_plan = plan(workdir)
    written = write_manifest(the_plan, [built(the_plan, CPU, "new.whl")])
    kept = workdir / "dist" / "relforge-manifest.1.0-nightly.json"
    assert load_manifest(kept) == old
    assert (workdir / "dist" / "old.whl").read_bytes() == b"old"
    assert written.notes == (
        "replaced dist/relforge-manifest.json (hello-native 1.0 on nightly): its validated "
        "entries (1) are kept, with their files, in dist/relforge-manifest.1.0-nightly.json",
    )
    # another build that would keep a validated nightly manifest under the same name is refused
    previous(workdir, old, "old.whl")
    with pytest.raises(RefusedError, match="exists already") as caught:
        plan(workdir)
    assert caught.value.key == "--out" and "--out" in (caught.value.hint or "")


def test_rebuilt_entry_replaced_and_dropped_cells_reported(workdir: Path) -> None:
    gone = "wheel-linux-x86_64-py3.9-cpu"  # a cell the matrix no longer has
    old = ArtifactManifest(project="hello-native", release="1.0", channel="dev").with_entries(
        [entry(CPU, "cpu-old.whl"), entry(CUDA, "cuda.whl"), entry(gone, "gone.whl")]
    )
    previous(workdir, old, "cpu-old.whl", "cuda.whl", "gone.whl")
    the_plan = plan(workdir)
    written = write_manifest(the_plan, [built(the_plan, CPU, "cpu-new.whl")])
    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert {k: e.file for k, e in manifest.entries.items()} == {
        CPU: "cpu-new.whl",
        CUDA: "cuda.whl",
    }
    assert written.notes == (
        "dropped the entries of cells release 1.0 no longer has (their files removed): " + gone,
    )
    files = sorted(p.name for p in (workdir / "dist").iterdir())
    assert files == ["cpu-new.whl", "cuda.whl", "relforge-manifest.json"]


def test_skipped_cells_are_recorded_and_failed_ones_lose_their_entry(workdir: Path) -> None:
    old = ArtifactManifest(project="hello-native", release="1.0", channel="dev").with_entries(
        [entry(CUDA, "cuda.whl")]
    )
    previous(workdir, old, "cuda.whl")
    the_plan = plan(workdir)
    skipped = CellResult(
        cell=cell_of(the_plan, CPU), status="skipped", builder="docker", reason="no image"
    )
    failed = CellResult(cell=cell_of(the_plan, CUDA), status="failed", builder="host")
    written = write_manifest(the_plan, [skipped, failed])
    data = json.loads((workdir / "dist" / "relforge-manifest.json").read_text())
    assert data["entries"] == {} and data["skipped"] == {CPU: "no image"}
    assert written.notes == ()
    assert not (workdir / "dist" / "cuda.whl").exists()
    # built later: the skip goes
    the_plan = plan(workdir)
    write_manifest(the_plan, [built(the_plan, CPU, "cpu.whl")])
    manifest = load_manifest(workdir / "dist" / "relforge-manifest.json")
    assert list(manifest.entries) == [CPU] and dict(manifest.skipped) == {}


def test_nothing_built_leaves_another_channels_manifest_alone(workdir: Path) -> None:
    old = ArtifactManifest(project="hello-native", release="1.0", channel="nightly")
    previous(workdir, old.with_entries([entry(CPU, "old.whl")]), "old.whl")
    the_plan = plan(workdir)
    failed = CellResult(cell=cell_of(the_plan, CPU), status="failed", builder="host")
    assert write_manifest(the_plan, [failed]).notes == ()
    assert load_manifest(workdir / "dist" / "relforge-manifest.json").channel == "nightly"
    assert (workdir / "dist" / "old.whl").exists()
