"""Two writers of one channel at once (issue 37, without the lease): a race between a folder's
page writes and its marker commit (injected by the test's store wrapper) converges, within the
run or on the rerun (a resumed journal too); a page changed by hand is still refused; and two
real `publish` processes started together on a local store and on S3 (moto) end with both
succeeded, or one refused and its rerun succeeding — never a rerun that refuses again."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.matrix import load_matrix
from relforge.promote import PublishRequest, execute, plan_publish
from relforge.promote.index.folder import apply_folder, plan_folder
from relforge.promote.index.pageset import MARKER
from relforge.promote.plans.storeplan import StorePlan
from relforge.stores.local import LocalStore
from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.test_index_pagesets import NEW, manifests
from tests.integration.test_promote_flow import s3_matrix
from tests.pacedcli import paced_relforge
from tests.promote_kit import matrix_text
from tests.unit.test_index_commitcheck import Killed, RacingStore

pytestmark = pytest.mark.slow
RELFORGE = [sys.executable, "-m", "relforge"]
FOLDERS = ("whl/test/cpu", "whl/test/cu128")


def local_matrix(tmp_path: Path) -> Path:
    """The matrix with a local store at an absolute path (runs in other folders share it)."""
    store = tmp_path / "store"
    publishing = f"publishing:\n  store: file://{store}\n"
    path = tmp_path / "matrix.yaml"
    path.write_text(matrix_text(publishing), encoding="utf-8")
    return path


def racing_plan(matrix: Path, manifest: Path, then_kill: str | None = None) -> StorePlan:
    """`publish` of `manifest`, its index pages written through a store wrapper that lets a
    rival run index the same folder between this run's page writes and its marker."""
    plan = plan_publish(
        PublishRequest(matrix=load_matrix(matrix), manifest_path=manifest, channel="test")
    )
    store = plan.store
    assert isinstance(store, LocalStore) and plan.index is not None
    view = plan.index.view

    def rival(folder: str) -> None:  # another run: its own reading of the manifests
        apply_folder(store, plan_folder(store, folder, view.fresh()))

    return dataclasses.replace(plan, store=RacingStore(store.root, rival, then_kill))


def consistent(store: Path) -> None:
    """Every folder's committed pages are the pages there; the root pages exist and list 1.0.1."""
    for folder in FOLDERS:
        marker = json.loads((store / folder / MARKER).read_text())
        for project, record in marker["projects"].items():
            page = (store / folder / project / "index.json").read_bytes()
            assert hashlib.sha256(page).hexdigest() == record["json_sha256"], (folder, project)
    root = json.loads((store / "whl/test/rfdemo/index.json").read_text())
    assert NEW in {f["filename"] for f in root["files"]}
    assert (store / "whl/test/index.json").is_file()


def settled(run: Callable[..., Result], matrix: Path, store: Path) -> None:
    """verify is clean, the pages are consistent, and a rerun of index changes nothing."""
    verify = run("verify", str(matrix), "--channel", "test")
    assert verify.code == 0, verify.out + verify.err
    consistent(store)
    again = run("index", str(matrix), "--channel", "test", "--execute")
    assert again.code == 0 and "0 folder(s) written" in again.out, again.out + again.err


@pytest.fixture
def published(tmp_path: Path, run: Callable[..., Result]) -> tuple[Path, Path]:
    """(matrix, manifest of 1.0.1) with 1.0.0 published to a local store."""
    matrix = local_matrix(tmp_path)
    old, new = manifests(tmp_path)
    first = run("publish", str(matrix), "--channel", "test", "--manifest", str(old), "--execute")
    assert first.code == 0, first.out + first.err
    return matrix, new


def test_a_race_before_the_marker_converges_within_the_run(
    tmp_path: Path, run: Callable[..., Result], published: tuple[Path, Path]
) -> None:
    matrix, manifest = published
    lines: list[str] = []
    outcome = execute(racing_plan(matrix, manifest), lines.append)
    # the first folder committed a marker over the rival's pages; the root build found it
    # and rebuilt that folder from the stored manifests before writing the root pages
    raced = [p for p in outcome.indexed if p.raced]
    assert len(raced) == 1 and raced[0].folder in FOLDERS and raced[0].raced == ("rfdemo",)
    settled(run, matrix, tmp_path / "store")


def test_the_rerun_of_a_raced_run_converges_and_a_resumed_journal_rebuilds(
    tmp_path: Path,
    run: Callable[..., Result],
    published: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The field test's worst round: the run is left with a marker over another run's pages
    and no root pages written (killed at the root), and its rerun resumes the journal."""
    monkeypatch.chdir(tmp_path)
    matrix, manifest = published
    store = tmp_path / "store"
    with pytest.raises(Killed):
        execute(racing_plan(matrix, manifest, then_kill="whl/test/"), lambda _: None)
    marker = json.loads((store / "whl/test/cpu" / MARKER).read_text())
    page = (store / "whl/test/cpu/rfdemo/index.json").read_bytes()
    assert hashlib.sha256(page).hexdigest() != marker["projects"]["rfdemo"]["json_sha256"]

    argv = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    rerun = run(*argv, "--execute")
    assert rerun.code == 0, rerun.out + rerun.err
    assert "resuming" in rerun.out
    assert "whl/test/cpu/: another run wrote the page(s) of rfdemo" in rerun.out
    settled(run, matrix, store)
    assert run(*argv, "--execute").code == 0


def test_a_committed_page_changed_by_hand_is_still_refused(
    tmp_path: Path, run: Callable[..., Result], published: tuple[Path, Path]
) -> None:
    matrix, manifest = published
    store = tmp_path / "store"
    assert run("publish", str(matrix), "--manifest", str(manifest), "--execute").code == 0
    key = store / "whl/test/cpu/rfdemo/index.json"
    page = json.loads(key.read_text())
    page["files"][0]["hashes"]["sha256"] = "0" * 64
    key.write_text(json.dumps(page))
    for argv in (
        ("index", str(matrix), "--channel", "test", "--execute"),
        ("publish", str(matrix), "--manifest", str(manifest), "--execute"),
    ):
        refused = run(*argv)
        assert refused.code == 5, refused.out + refused.err
        assert "no stored manifest explains" in refused.err
        assert "whl/test/cpu/rfdemo/index.json: lists rfdemo-1.0.0+cpu" in refused.err
    assert json.loads(key.read_text()) == page  # nothing written over it
    repaired = run("verify", str(matrix), "--channel", "test", "--repair", "--execute")
    assert repaired.code == 0, repaired.out + repaired.err
    settled(run, matrix, store)


def concurrent(matrix: Path, argvs: list[list[str]], cwd: Path) -> list[int]:
    """Start every command at once (each in its own folder: its own journal); exit codes."""
    # slow page writes widen the window between a folder's page writes and its marker, so
    # that runs started together do overlap there
    procs = []
    for i, argv in enumerate(argvs):
        work = cwd / f"writer-{i}"
        work.mkdir(parents=True, exist_ok=True)
        procs.append(
            subprocess.Popen(
                [*paced_relforge(page_delay=0.15), *argv],
                cwd=work,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    codes = []
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode in (0, 5), err.decode()
        if proc.returncode == 5:
            assert b"is not the page" in err or b"another run" in err, err.decode()
        codes.append(proc.returncode)
    return codes


def race_rounds(
    tmp_path: Path,
    run: Callable[..., Result],
    matrix: Path,
    rounds: int,
    forget: Callable[[str], None],
    read_store: Path | None = None,
) -> None:
    """Rounds of writers started together — `publish` of the next version and `index`, then
    two `index` runs that both rebuild every folder (`forget` deletes a key: the folders'
    markers) — each run succeeded, or refused and its rerun (in its own folder: the resumed
    journal) succeeds."""
    old, new = manifests(tmp_path)
    argv = ["publish", str(matrix), "--channel", "test", "--manifest"]
    assert run(*argv, str(old), "--execute").code == 0
    index = ["index", str(matrix), "--channel", "test", "--execute"]
    for i in range(rounds):
        if i:
            for folder in FOLDERS:
                forget(f"{folder}/{MARKER}")
        argvs = [[*argv, str(new), "--execute"], index] if i == 0 else [index, index]
        codes = concurrent(matrix, argvs, tmp_path / f"round-{i}")
        for n, (code, again) in enumerate(zip(codes, argvs, strict=True)):
            if code == 5:  # the rerun never refuses again
                rerun = subprocess.run(
                    [*RELFORGE, *again], cwd=tmp_path / f"round-{i}/writer-{n}", capture_output=True
                )
                assert rerun.returncode == 0, rerun.stderr.decode()
        verify = run("verify", str(matrix), "--channel", "test")
        assert verify.code == 0, verify.out + verify.err
    if read_store is not None:
        consistent(read_store)
    last = run(*index)
    assert last.code == 0 and "0 folder(s) written" in last.out, last.out + last.err


def test_concurrent_writers_on_a_local_store(tmp_path: Path, run: Callable[..., Result]) -> None:
    store = tmp_path / "store"
    matrix = local_matrix(tmp_path)
    race_rounds(tmp_path, run, matrix, 2, lambda key: (store / key).unlink(), store)


def test_concurrent_writers_on_s3(tmp_path: Path, run: Callable[..., Result], s3: S3) -> None:
    client: Any = s3.client()
    matrix = s3_matrix(tmp_path, s3)

    def forget(key: str) -> None:
        client.delete_object(Bucket=s3.bucket, Key=f"dl/{key}")

    race_rounds(tmp_path, run, matrix, 1, forget)  # publish racing index: the field test's
