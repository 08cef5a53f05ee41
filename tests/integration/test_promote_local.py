"""The embedded default: a local directory store (`.relforge/store`), served over HTTP as a
static site, installed from with real pip; nightly pruning; incremental re-indexing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from relforge.stores.objectstore import ObjectInfo
from tests.conftest import Result
from tests.integration.conftest import pip_install
from tests.promote_kit import build_wheel, matrix_text, write_manifest

pytestmark = pytest.mark.slow
CPU = "wheel-linux-x86_64-py3.11-cpu"


def publish_nightly(
    run: Callable[..., Result], tmp_path: Path, matrix: Path, day: str, *extra: str
) -> Result:
    """`publish --partial --execute` of the cpu cell's wheel of nightly 1.0.0.dev<day>."""
    work = tmp_path / f"build-{day}"
    wheel = build_wheel(
        work, version=f"1.0.0.dev{day}+cpu", plat="manylinux_2_28_x86_64", payload=day
    )
    manifest = work / "relforge-manifest.json"
    write_manifest(manifest, {CPU: wheel}, channel="nightly")
    argv = ["publish", str(matrix), "--channel", "nightly", "--manifest", str(manifest)]
    return run(*argv, "--partial", *extra, "--execute")


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


def test_no_page_links_a_pruned_file_while_it_is_deleted_and_a_kill_there_is_finished(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nightly pruning deletes a file only once the pages (variant and channel root) no longer
    list it: every delete is checked against the pages of that moment; a run killed at the
    first delete leaves pages that link only files the store holds, and the rerun deletes."""
    from relforge.stores.local import LocalStore

    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text("publishing:\n  nightly_keep: 1\n"), encoding="utf-8")
    store = tmp_path / ".relforge" / "store"
    old = "rfdemo-1.0.0.dev20260101+cpu-py3-none-manylinux_2_28_x86_64.whl"

    def publish(day: str) -> Result:
        return publish_nightly(run, tmp_path, matrix, day)

    def listed() -> str:
        pages = [
            store / "whl/nightly/cpu/rfdemo/index.json",
            store / "whl/nightly/rfdemo/index.json",
        ]
        return "".join(p.read_text() for p in pages if p.exists())

    assert publish("20260101").code == 0
    assert old in listed()
    real_delete = LocalStore.delete
    seen: list[str] = []

    def killed_at_first_delete(self: LocalStore, key: str) -> None:
        assert key.rsplit("/", 1)[-1].removesuffix(".metadata") not in listed(), key
        seen.append(key)
        raise KeyboardInterrupt  # the run is killed here

    with monkeypatch.context() as patch:
        patch.setattr(LocalStore, "delete", killed_at_first_delete)
        killed = publish("20260102")
    assert seen and killed.code == 130, killed.out + killed.err  # interrupted
    assert old not in listed() and (store / "whl/nightly/cpu" / old).exists()

    def checked(self: LocalStore, key: str) -> None:
        assert key.rsplit("/", 1)[-1].removesuffix(".metadata") not in listed(), key
        real_delete(self, key)

    with monkeypatch.context() as patch:
        patch.setattr(LocalStore, "delete", checked)
        rerun = publish("20260102")
    assert rerun.code == 0, rerun.out + rerun.err
    assert not (store / "whl/nightly/cpu" / old).exists()
    assert run("verify", str(matrix), "--channel", "nightly").code == 0


def test_the_index_job_prunes_what_no_index_uploads_leave_and_no_page_links_it(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generated workflows upload each cell with `publish --no-index` and then run
    `relforge index`: the upload deletes no wheel (the pages it does not rebuild still list the
    older nightlies), the index job leaves them off the pages and deletes them after; every
    delete is checked against the pages of that moment, and a kill at the first delete is
    finished by the rerun."""
    from relforge.stores.local import LocalStore

    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text("publishing:\n  nightly_keep: 1\n"), encoding="utf-8")
    store = tmp_path / ".relforge" / "store"
    folder = store / "whl" / "nightly" / "cpu"
    old = "rfdemo-1.0.0.dev20260101+cpu-py3-none-manylinux_2_28_x86_64.whl"
    new = "rfdemo-1.0.0.dev20260102+cpu-py3-none-manylinux_2_28_x86_64.whl"
    index = ("index", str(matrix), "--channel", "nightly", "--partial")

    def upload(day: str) -> Result:
        return publish_nightly(run, tmp_path, matrix, day, "--no-index")

    def listed() -> str:
        pages = [folder / "rfdemo" / "index.json", store / "whl/nightly/rfdemo/index.json"]
        return "".join(p.read_text() for p in pages if p.exists())

    assert upload("20260101").code == 0
    assert run(*index, "--execute").code == 0
    uploaded = upload("20260102")
    assert uploaded.code == 0, uploaded.out + uploaded.err
    assert "delete    " not in uploaded.out and ", 0 deleted," in uploaded.out
    assert "relforge index` prunes" in uploaded.out
    assert (folder / old).exists() and old in listed()  # what the pages link is still there

    real_list = LocalStore.list
    listed_prefixes: list[str] = []

    def counted(self: LocalStore, prefix: str = "") -> Iterator[ObjectInfo]:
        listed_prefixes.append(prefix)
        return real_list(self, prefix)

    with monkeypatch.context() as patch:
        patch.setattr(LocalStore, "list", counted)
        dry = run(*index)
    assert dry.code == 0, dry.out + dry.err
    folders = [p for p in listed_prefixes if p.startswith("whl/nightly/") and p.count("/") == 3]
    assert folders and len(folders) == len(set(folders))  # pruning and pages: one listing
    assert f"delete    whl/nightly/cpu/{old}" in dry.out and (folder / old).exists()

    real_delete = LocalStore.delete
    seen: list[str] = []

    def killed_at_first_delete(self: LocalStore, key: str) -> None:
        assert key.rsplit("/", 1)[-1].removesuffix(".metadata") not in listed(), key
        seen.append(key)
        raise KeyboardInterrupt  # the index job is killed here

    with monkeypatch.context() as patch:
        patch.setattr(LocalStore, "delete", killed_at_first_delete)
        killed = run(*index, "--execute")
    assert seen and killed.code == 130, killed.out + killed.err
    assert old not in listed() and new in listed() and (folder / old).exists()

    def checked(self: LocalStore, key: str) -> None:
        assert key.rsplit("/", 1)[-1].removesuffix(".metadata") not in listed(), key
        real_delete(self, key)

    with monkeypatch.context() as patch:
        patch.setattr(LocalStore, "delete", checked)
        rerun = run(*index, "--execute", "--format", "json")
    assert rerun.code == 0, rerun.out + rerun.err
    assert json.loads(rerun.out)["pruned"] == [
        f"whl/nightly/cpu/{old}",
        f"whl/nightly/cpu/{old}.metadata",
    ]
    assert sorted(p.name for p in folder.glob("*.whl")) == [new]
    assert run(*index, "--execute").code == 0  # nothing left to prune: a no-op
    assert run("verify", str(matrix), "--channel", "nightly").code == 0
