"""Whole releases only (issue 16 item 5): per-cell jobs publish one cell each, as the generated
workflows do; a version is on no page (HTML, JSON, folder page) and pip cannot find it until
every cell the matrix expects is stored and verified; a drifted cell does not count; an older
complete version stays installable meanwhile; `--partial` exposes and says so; promotion
copies whole releases only.  The local store served over HTTP, and S3 on moto."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3, pip_install
from tests.integration.test_promote_flow import s3_matrix
from tests.promote_kit import CELLS, matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
LINUX_CPU = "wheel-linux-x86_64-py3.11-cpu"
LINUX_CU128 = "wheel-linux-x86_64-py3.11-cu128"
WINDOWS_CPU = "wheel-windows-x86_64-py3.11-cpu"
FOLDERS = ("whl/test/cpu", "whl/test/cu128")


def cell_manifests(tmp_path: Path, version: str) -> dict[str, Path]:
    """One manifest per cell (what each per-cell CI job holds), for `version`."""
    wheels = release_wheels(tmp_path / f"wheels-{version}", version=version)
    out = {}
    for cell_id, wheel in wheels.items():
        work = tmp_path / f"job-{version}-{cell_id}"
        work.mkdir(parents=True)
        copied = work / wheel.name
        copied.write_bytes(wheel.read_bytes())
        write_manifest(work / "relforge-manifest.json", {cell_id: copied})
        out[cell_id] = work / "relforge-manifest.json"
    return out


def publish(run: Callable[..., Result], matrix: Path, manifest: Path, *extra: str) -> Result:
    argv = ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)]
    done = run(*argv, "--execute", *extra)
    assert done.code == 0, done.out + done.err
    return done


def page_texts(read: Callable[[str], bytes | None]) -> str:
    """Every page of the channel's folders (project HTML/JSON, folder pages), concatenated."""
    out = []
    for folder in FOLDERS:
        for name in ("index.html", "index.json", "rfdemo/index.html", "rfdemo/index.json"):
            data = read(f"{folder}/{name}")
            if data is not None:
                out.append(data.decode())
    return "\n".join(out)


def json_versions(read: Callable[[str], bytes | None], folder: str) -> set[str]:
    data = read(f"{folder}/rfdemo/index.json")
    if data is None:
        return set()
    page: Any = json.loads(data)
    return {f["filename"].split("-")[1].split("+")[0] for f in page["files"]}


def pip_finds(tmp_path: Path, index_url: str, requirement: str) -> bool:
    """Can real pip download `requirement` from this index alone?"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(
        [
            sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--no-cache-dir",
            "--index-url", index_url, "-d", str(tmp_path / "downloads"), requirement,
        ],
        capture_output=True,
        text=True,
        env=env,
    )  # fmt: skip
    if done.returncode != 0:
        assert "No matching distribution" in done.stderr, done.stderr
    return done.returncode == 0


def local_reader(store: Path) -> Callable[[str], bytes | None]:
    def read(key: str) -> bytes | None:
        path = store / key
        return path.read_bytes() if path.is_file() else None

    return read


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    return matrix


def test_a_version_appears_only_whole_and_an_older_one_stays(
    tmp_path: Path,
    run: Callable[..., Result],
    local: Path,
    static_server: Callable[[Path], str],
) -> None:
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    store.mkdir(parents=True)
    url = static_server(store)
    old = cell_manifests(tmp_path, "1.0.0")
    for manifest in old.values():
        publish(run, local, manifest)
    assert json_versions(read, "whl/test/cpu") == {"1.0.0"}

    new = cell_manifests(tmp_path, "1.0.1")
    first = publish(run, local, new[LINUX_CPU])
    assert "after this upload: 1.0.1: 1 of 3 cells uploaded and verified; not on the pages " in (
        first.out
    )
    assert f"missing: {LINUX_CU128}; {WINDOWS_CPU}" in first.out
    # the plan says it, and so does the report after the run
    assert first.out.count("1.0.1: 1 of 3 cells uploaded and verified; not on the pages") == 2
    assert (store / "whl/test/cpu/rfdemo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl").is_file()
    second = publish(run, local, new[LINUX_CU128])
    assert f"2 of 3 cells uploaded and verified; not on the pages until complete; missing: " \
        f"{WINDOWS_CPU}" in second.out  # fmt: skip
    pages = page_texts(read)
    assert "1.0.1" not in pages and "1.0.0" in pages
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0"}
    assert not pip_finds(tmp_path, f"{url}/whl/test/cpu/", "rfdemo==1.0.1")
    assert not pip_finds(tmp_path, f"{url}/whl/test/cu128/", "rfdemo==1.0.1")
    # the older complete version is what pip installs meanwhile
    assert pip_install(tmp_path, f"{url}/whl/test/cu128/", "rfdemo") == f"{LINUX_CU128} 1.0.0+cu128"

    # verify agrees: pages that leave out a version that is not whole are right
    verified = run("verify", str(local), "--channel", "test")
    assert verified.code == 0, verified.out + verified.err

    # an index run does not expose it either, and says why
    indexed = run("index", str(local), "--channel", "test", "--execute")
    assert indexed.code == 0, indexed.err
    assert f"1.0.1: 2 of 3 cells uploaded and verified; not on the pages until complete; " \
        f"missing: {WINDOWS_CPU}" in indexed.out  # fmt: skip
    assert "1.0.1" not in page_texts(read)

    # the missing wheel put into the store by hand, no manifest naming it: it does not count
    windows = "rfdemo-1.0.1+cpu-py3-none-win_amd64.whl"
    job = new[WINDOWS_CPU].parent
    (store / "whl/test/cpu" / windows).write_bytes((job / windows).read_bytes())
    by_hand = run("index", str(local), "--channel", "test", "--execute")
    assert by_hand.code == 0, by_hand.out + by_hand.err
    assert f"missing: {WINDOWS_CPU}" in by_hand.out
    assert "1.0.1" not in page_texts(read)

    as_json = run("index", str(local), "--channel", "test", "--format", "json")
    assert as_json.code == 0, as_json.err
    states = {v["version"]: v for v in json.loads(as_json.out)["whole_releases"]["versions"]}
    assert states["1.0.0"]["complete"] and states["1.0.0"]["on_pages"]
    assert states["1.0.1"] == {
        "version": "1.0.1",
        "releases": ["1.0"],
        "judged": True,
        "complete": False,
        "on_pages": False,
        "recorded": None,
        "expected": 3,
        "verified": 2,
        "missing": {WINDOWS_CPU: "not uploaded"},
    }
    assert "not on the pages until complete" in as_json.err  # the progress goes to stderr

    # the last cell completes it: every page lists it, pip installs it
    last = publish(run, local, new[WINDOWS_CPU])
    assert "after this upload: 1.0.1: 3 of 3 cells uploaded and verified; complete" in last.out
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0", "1.0.1"}
    html = (read("whl/test/cpu/rfdemo/index.html") or b"").decode()
    assert "rfdemo-1.0.1+cpu-py3-none-win_amd64.whl" in html
    assert pip_finds(tmp_path, f"{url}/whl/test/cpu/", "rfdemo==1.0.1")
    assert pip_install(tmp_path, f"{url}/whl/test/cu128/", "rfdemo") == f"{LINUX_CU128} 1.0.1+cu128"

    again = run("index", str(local), "--channel", "test", "--execute")
    assert again.code == 0 and "0 folder(s) written" in again.out, again.out
    assert "not on the pages" not in again.out


def test_a_drifted_cell_does_not_count_until_its_bytes_are_right_again(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    manifests = cell_manifests(tmp_path, "1.0.0")
    publish(run, local, manifests[LINUX_CPU])
    publish(run, local, manifests[LINUX_CU128])
    drifted = store / "whl/test/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"
    good = drifted.read_bytes()
    drifted.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # same size, other bytes
    # the last cell does not complete it: the drifted one does not count, and drift is refused
    # (exit 5) with no page written, as for any object that is not its manifest's bytes
    argv = ["publish", str(local), "--channel", "test", "--execute"]
    last = run(*argv, "--manifest", str(manifests[WINDOWS_CPU]))
    assert last.code == 5, last.out + last.err
    expected = (
        "after this upload: 1.0.0: 2 of 3 cells uploaded and verified; not on the pages until "
        f"complete; missing: {LINUX_CU128} (drifted: the store holds sha256"
    )
    assert expected in last.out
    assert f"{drifted.relative_to(store)} ({LINUX_CU128}): the store holds sha256" in last.err
    assert "1.0.0" not in page_texts(read)
    assert json_versions(read, "whl/test/cpu") == set()
    # --partial does not advertise a drifted file either
    partial = run("index", str(local), "--channel", "test", "--partial", "--execute")
    assert partial.code == 5, partial.out + partial.err
    assert "1.0.0" not in page_texts(read)

    drifted.write_bytes(good)
    fixed = run("index", str(local), "--channel", "test", "--execute")
    assert fixed.code == 0, fixed.out + fixed.err
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0"}


def test_partial_exposes_loudly_and_promotion_copies_whole_releases(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    manifests = cell_manifests(tmp_path, "1.0.0")
    publish(run, local, manifests[LINUX_CPU])
    assert json_versions(read, "whl/test/cpu") == set()

    refused = run("promote", str(local), "--version", "1.0.0", "--execute")
    assert refused.code == 5, refused.out + refused.err
    assert "1.0.0 is not a whole release" in refused.err
    assert "1 of the 3 cells" in refused.err and LINUX_CU128 in refused.err
    assert not (store / "whl/cpu").exists()  # nothing copied

    partial = publish(run, local, manifests[LINUX_CU128], "--partial")
    assert "ON THE PAGES ANYWAY (--partial)" in partial.out
    assert "WARNING: incomplete version(s) 1.0.0 are on the pages (--partial)" in partial.out
    assert "recorded: relforge/advertised/test/rfdemo/1.0.0.json (PARTIAL)" in partial.out
    record = json.loads((store / "relforge/advertised/test/rfdemo/1.0.0.json").read_text())
    assert record["missing"] == {WINDOWS_CPU: "not uploaded"} and record["whole"] is False
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0"}

    # the decision stands: a later run without --partial keeps it on the pages, still reported
    kept = run("index", str(local), "--channel", "test", "--execute")
    assert kept.code == 0, kept.out + kept.err
    assert "ON THE PAGES ANYWAY (--partial, recorded earlier)" in kept.out
    assert "WARNING: incomplete version(s) 1.0.0" in kept.out
    assert json_versions(read, "whl/test/cu128") == {"1.0.0"}
    # deleting the record withdraws it
    (store / "relforge/advertised/test/rfdemo/1.0.0.json").unlink()
    hidden = run("index", str(local), "--channel", "test", "--execute")
    assert hidden.code == 0 and "not on the pages until complete" in hidden.out
    assert "1.0.0" not in page_texts(read)

    promoted = run("promote", str(local), "--version", "1.0.0", "--partial", "--execute")
    assert promoted.code == 0, promoted.out + promoted.err
    assert "ON THE PAGES ANYWAY (--partial)" in promoted.out
    assert json_versions(read, "whl/cpu") == {"1.0.0"}
    assert (store / "relforge/advertised/release/rfdemo/1.0.0.json").is_file()

    # the whole release promotes without --partial once the last cell is in test
    publish(run, local, manifests[WINDOWS_CPU])
    whole = run("promote", str(local), "--version", "1.0.0", "--execute")
    assert whole.code == 0, whole.out + whole.err
    assert "after this promotion: 1.0.0: 3 of 3 cells uploaded and verified; complete" in whole.out
    assert (
        "rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"
        in (read("whl/cpu/rfdemo/index.html") or b"").decode()
    )


def test_an_index_partial_killed_before_its_pages_is_finished_by_the_next_run(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    # `index --partial` records its decision before it writes a page; a run killed right after
    # the record (the state it leaves is made here in-process: record written, no page) is
    # finished by a plain `index`, which advertises what the killed run began to
    from relforge.matrix.load import load_matrix
    from relforge.promote.index.channelindex import IndexRequest, plan_channel_index

    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    manifests = cell_manifests(tmp_path, "1.0.0")
    publish(run, local, manifests[LINUX_CPU])
    planned = plan_channel_index(
        IndexRequest(matrix=load_matrix(str(local)), channel="test", partial=True)
    )
    assert [whole for _, whole in planned.view.completeness.record()] == [False]
    assert json_versions(read, "whl/test/cpu") == set()  # killed: no page yet

    finished = run("index", str(local), "--channel", "test", "--execute")
    assert finished.code == 0, finished.out + finished.err
    assert "ON THE PAGES ANYWAY (--partial, recorded earlier)" in finished.out
    assert json_versions(read, "whl/test/cpu") == {"1.0.0"}


def test_a_yanked_cell_still_counts(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    manifests = cell_manifests(tmp_path, "1.0.0")
    for manifest in manifests.values():
        publish(run, local, manifest)
    yank = run(
        "yank", str(local), "--version", "1.0.0", "--cell", LINUX_CU128, "--channel", "test",
        "--reason", "bad build", "--execute",
    )  # fmt: skip
    assert yank.code == 0, yank.out + yank.err
    assert json_versions(read, "whl/test/cpu") == {"1.0.0"}
    page: Any = json.loads(read("whl/test/cu128/rfdemo/index.json") or b"{}")
    assert [f["yanked"] for f in page["files"]] == ["bad build"]
    assert "not on the pages" not in run("index", str(local), "--channel", "test").out


def test_nightly_prune_keeps_the_complete_nightly_while_the_next_arrives(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    """nightly_keep 1: the first cell of tonight's nightly must not prune last night's whole one
    (the folder's page would be empty until tonight's is complete)."""
    local.write_text(matrix_text("publishing:\n  nightly_keep: 1\n"), encoding="utf-8")
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    nights = {}
    for day in ("20260101", "20260102"):
        wheels = release_wheels(tmp_path / day, version=f"1.0.0.dev{day}")
        per_cell = {}
        for cell_id, wheel in wheels.items():
            work = tmp_path / f"{day}-{cell_id}"
            work.mkdir()
            (work / wheel.name).write_bytes(wheel.read_bytes())
            write_manifest(work / "m.json", {cell_id: work / wheel.name}, channel="nightly")
            per_cell[cell_id] = work / "m.json"
        nights[day] = per_cell
    argv = ["publish", str(local), "--channel", "nightly", "--execute", "--manifest"]
    for manifest in nights["20260101"].values():
        assert run(*argv, str(manifest)).code == 0
    first = run(*argv, str(nights["20260102"][LINUX_CPU]))
    assert first.code == 0, first.out + first.err
    assert "prune (" not in first.out and ", 0 deleted" in first.out
    cpu = json.loads(read("whl/nightly/cpu/rfdemo/index.json") or b"{}")
    assert {f["filename"].split("-")[1] for f in cpu["files"]} == {"1.0.0.dev20260101+cpu"}
    for cell_id in (LINUX_CU128, WINDOWS_CPU):
        done = run(*argv, str(nights["20260102"][cell_id]))
        assert done.code == 0, done.out + done.err
    assert "prune (" in done.out  # the whole new nightly retires the old one
    cpu = json.loads(read("whl/nightly/cpu/rfdemo/index.json") or b"{}")
    assert {f["filename"].split("-")[1] for f in cpu["files"]} == {"1.0.0.dev20260102+cpu"}
    assert set(CELLS) == set(nights["20260102"])


def test_on_s3_a_partial_version_is_on_no_page(
    tmp_path: Path, run: Callable[..., Result], s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    client: Any = s3.client()

    def read(key: str) -> bytes | None:
        try:
            body: bytes = client.get_object(Bucket=s3.bucket, Key=f"dl/{key}")["Body"].read()
        except client.exceptions.NoSuchKey:
            return None
        return body

    manifests = cell_manifests(tmp_path, "1.0.0")
    publish(run, matrix, manifests[LINUX_CPU])
    publish(run, matrix, manifests[WINDOWS_CPU])
    assert "1.0.0" not in page_texts(read)
    assert read("whl/test/cpu/rfdemo-1.0.0+cpu-py3-none-win_amd64.whl") is not None
    last = publish(run, matrix, manifests[LINUX_CU128])
    assert "complete" in last.out
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0"}
    again = publish(run, matrix, manifests[LINUX_CU128])
    assert "everything was already in place" in again.out


def test_a_shipped_version_stays_when_the_matrix_grows(
    tmp_path: Path, run: Callable[..., Result], local: Path
) -> None:
    store = tmp_path / ".relforge" / "store"
    read = local_reader(store)
    for manifest in cell_manifests(tmp_path, "1.0.0").values():
        publish(run, local, manifest)
    record = json.loads((store / "relforge/advertised/test/rfdemo/1.0.0.json").read_text())
    assert record["whole"] is True and record["missing"] == {}
    # a Python added to the release later: 1.0.0 never had those cells, and it shipped
    local.write_text(
        matrix_text().replace('python: ["3.11"]', 'python: ["3.11", "3.12"]'), encoding="utf-8"
    )
    (store / "whl/test/cpu/.relforge-pages.json").unlink()  # every page rebuilt
    grown = run("index", str(local), "--channel", "test", "--execute")
    assert grown.code == 0, grown.out + grown.err
    assert "3 of 6 cells uploaded and verified; on the pages (it was whole when first " in (
        grown.out
    )
    assert "WARNING" not in grown.out
    for folder in FOLDERS:
        assert json_versions(read, folder) == {"1.0.0"}
