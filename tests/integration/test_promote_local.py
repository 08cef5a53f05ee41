"""The embedded default: a local directory store (`.relforge/store`), served over HTTP as a
static site, installed from with real pip; nightly pruning; incremental re-indexing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import pip_install
from tests.promote_kit import build_wheel, matrix_text, write_manifest

pytestmark = pytest.mark.slow
CPU = "wheel-linux-x86_64-py3.11-cpu"


def test_nightly_on_the_local_store_installs_prunes_and_reindexes_incrementally(
    tmp_path: Path,
    run: Callable[..., Result],
    static_server: Callable[[Path], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text("publishing:\n  nightly_keep: 2\n"), encoding="utf-8")
    store = tmp_path / ".relforge" / "store"
    folder = store / "whl" / "nightly" / "cpu"
    days = ["20260101", "20260102", "20260103"]
    for day in days:
        work = tmp_path / f"build-{day}"
        wheel = build_wheel(
            work, version=f"1.0.0.dev{day}+cpu", plat="manylinux_2_28_x86_64", payload=day
        )
        manifest = work / "relforge-manifest.json"
        write_manifest(manifest, {CPU: wheel}, channel="nightly")
        result = run(
            "publish",
            str(matrix),
            "--channel",
            "nightly",
            "--manifest",
            str(manifest),
            "--partial",
            "--execute",
        )  # one cell of three: on the pages and counted for nightly_keep
        assert result.code == 0, result.err

    assert "delete    whl/nightly/cpu/rfdemo-1.0.0.dev20260101+cpu" in result.out
    wheels = sorted(p.name for p in folder.glob("*.whl"))
    assert wheels == [
        "rfdemo-1.0.0.dev20260102+cpu-py3-none-manylinux_2_28_x86_64.whl",
        "rfdemo-1.0.0.dev20260103+cpu-py3-none-manylinux_2_28_x86_64.whl",
    ]
    assert not list(folder.glob("*dev20260101*"))  # the sidecar went with its wheel
    page = json.loads((folder / "rfdemo" / "index.json").read_text())
    assert page["versions"] == ["1.0.0.dev20260102+cpu", "1.0.0.dev20260103+cpu"]
    assert all(len(f["hashes"]["sha256"]) == 64 and "core-metadata" in f for f in page["files"])
    assert all(f["requires-python"] == ">=3.8" for f in page["files"])

    url = static_server(store)
    installed = pip_install(tmp_path, f"{url}/whl/nightly/cpu/", "rfdemo>=1.0.0.dev0")
    assert installed == "20260103 1.0.0.dev20260103+cpu"

    # every folder of the channel has an index, even one nothing was published to
    index = run("index", str(matrix), "--channel", "nightly", "--execute")
    assert index.code == 0, index.err
    assert (store / "whl" / "nightly" / "cu128" / "index.html").is_file()
    assert "rfdemo" not in (store / "whl" / "nightly" / "cu128" / "index.html").read_text()
    # nothing changed since: a rerun rebuilds nothing and writes nothing
    before = {p: p.stat().st_mtime_ns for p in store.rglob("index.*")}
    again = run("index", str(matrix), "--channel", "nightly", "--execute")
    assert "0 folder(s) written" in again.out
    assert {p: p.stat().st_mtime_ns for p in store.rglob("index.*")} == before
