"""verify on the local store: a repair killed between removing the bad object and writing the
good one finishes on rerun; a manifest that records the sidecar digest is the one compared."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.manifest import load_manifest
from relforge.stores.objectstore import sha256_bytes
from relforge.wheelformat import core_metadata
from tests.conftest import Result
from tests.integration.verify_kit import LocalRaw, flip
from tests.pacedcli import paced_relforge
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow

CPU_LINUX = "whl/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"
CPU_WIN = "whl/cpu/rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"


def release(tmp_path: Path, run: Callable[..., Result], *, metadata_digest: bool = False) -> Path:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    path = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(path, release_wheels(tmp_path / "work"))
    if metadata_digest:  # what publish records for each wheel's sidecar
        manifest = load_manifest(path)
        entries = []
        for e in manifest.entries.values():
            meta = core_metadata(path.parent / e.file)
            entries.append(
                dataclasses.replace(e, metadata_sha256=sha256_bytes(meta), metadata_size=len(meta))
            )
        manifest.with_entries(entries).save(path)
    args = ("--manifest", str(path), "--execute")
    assert run("publish", str(matrix), "--channel", "test", *args).code == 0
    assert run("promote", str(matrix), "--version", "1.0.0", "--execute").code == 0
    return matrix


def test_a_killed_repair_finishes_on_rerun(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = release(tmp_path, run)
    store = LocalRaw(tmp_path / ".relforge" / "store")
    good = store.read(CPU_LINUX)
    store.write(CPU_LINUX, flip(good))
    args = ["verify", str(matrix), "--channel", "release"]
    proc = subprocess.Popen(  # a long pause after removing the bad bytes: killed there
        [*paced_relforge(delete_delay=60), *args, "--repair", "--execute"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = store.root / CPU_LINUX
    deadline = time.monotonic() + 120
    while target.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not target.exists()  # killed after moving the bad bytes aside, before the good ones
    quarantined = list((store.root / "relforge" / "quarantine" / "release").rglob("*.whl"))
    assert [p.read_bytes() for p in quarantined] == [flip(good)]

    halfway = run("verify", str(matrix), "--channel", "release", "--format", "json")
    assert halfway.code == 4
    found = {(f["kind"], f["key"]) for f in json.loads(halfway.out)["findings"]}
    assert ("missing", CPU_LINUX) in found  # and the pages that link it
    assert {kind for kind, _ in found} == {"missing", "page"}
    finished = run("verify", str(matrix), "--channel", "release", "--repair", "--execute")
    assert finished.code == 0, finished.out + finished.err
    assert store.read(CPU_LINUX) == good
    assert run("verify", str(matrix), "--channel", "release").code == 0


def test_the_manifests_sidecar_digest_is_what_a_sidecar_is_held_to(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = release(tmp_path, run, metadata_digest=True)
    store = LocalRaw(tmp_path / ".relforge" / "store")
    sidecar = CPU_WIN + ".metadata"
    original = store.read(sidecar)
    store.write(
        sidecar, original.replace(b"Version: 1.0.0+cpu", b"Version: 1.0.0+cpu\nRequires-Dist: evil")
    )
    result = run("verify", str(matrix), "--channel", "release", "--format", "json")
    assert result.code == 4
    (finding,) = json.loads(result.out)["findings"]
    assert finding["kind"] == "sidecar" and finding["key"] == sidecar
    assert "the manifest's metadata digest" in finding["message"]
    assert finding["expected_sha256"] == sha256_bytes(original)
    fixed = run("verify", str(matrix), "--channel", "release", "--repair", "--execute")
    assert fixed.code == 0, fixed.out + fixed.err
    assert store.read(sidecar) == original


def test_a_channel_nothing_was_published_to_is_nothing_to_verify(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    result = run("verify", str(matrix), "--channel", "nightly")
    assert (
        result.code == 3 and "no manifest of rfdemo is stored in the nightly channel" in result.err
    )
    # an unvouched wheel where nothing was published is a finding, not "nothing to do"
    stray = tmp_path / ".relforge/store/whl/nightly/cpu/rfdemo-9.0-py3-none-any.whl"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"who put this here")
    found = run("verify", str(matrix), "--channel", "nightly", "--format", "json")
    assert found.code == 4
    assert [f["kind"] for f in json.loads(found.out)["findings"]] == ["extra"]
