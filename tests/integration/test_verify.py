"""`relforge verify` on a released channel, in the local store and in S3 (moto): every kind of
tampering is named (exit 4, JSON), `--repair` plans from verified sources only and changes
nothing without `--execute`, then restores everything; a source that was tampered with too is
never used."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relforge.stores.local import LocalStore
from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.verify_kit import LocalRaw, Raw, S3Raw, flip
from tests.promote_kit import build_wheel, matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow

CPU_LINUX = "whl/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"
CPU_WIN = "whl/cpu/rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"
CUDA = "whl/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"
EXTRA = "whl/cpu/rfdemo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl"


@dataclass
class Released:
    matrix: Path
    store: Raw  # the main store
    backup: Raw  # where promote keeps its backup copies (keys: rfdemo/1.0.0/<key>)
    everything: Callable[[], dict[str, bytes]]  # every byte of every store involved
    kind: str


@pytest.fixture(params=["local", "s3"])
def released(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> Released:
    """rfdemo 1.0.0 published to test and promoted to release, in a local or an S3 store."""
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    if request.param == "local":
        matrix.write_text(matrix_text(), encoding="utf-8")
        root = tmp_path / ".relforge" / "store"
        store: Raw = LocalRaw(root)
        backup: Raw = LocalRaw(root / "backup")
        everything = LocalRaw(root).snapshot
    else:
        s3: S3 = request.getfixturevalue("s3")
        client = s3.client()
        client.create_bucket(Bucket=f"{s3.bucket}-backup")
        publishing = textwrap.dedent(f"""\
            publishing:
              store: s3://{s3.bucket}/dl
              s3_endpoint_url: {s3.endpoint}
              backup_store: s3://{s3.bucket}-backup/tags
            """)
        matrix.write_text(matrix_text(publishing), encoding="utf-8")
        store = S3Raw(client, s3.bucket, "dl")
        backup = S3Raw(client, f"{s3.bucket}-backup", "tags")
        main_all, backup_all = S3Raw(client, s3.bucket), S3Raw(client, f"{s3.bucket}-backup")

        def everything() -> dict[str, bytes]:
            return {
                **main_all.snapshot(),
                **{f"backup:{k}": v for k, v in backup_all.snapshot().items()},
            }

    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    published = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert published.code == 0, published.err
    promoted = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert promoted.code == 0, promoted.err
    return Released(
        matrix=matrix, store=store, backup=backup, everything=everything, kind=request.param
    )


def verify(run: Callable[..., Result], r: Released, *extra: str) -> tuple[Result, dict[str, Any]]:
    result = run("verify", str(r.matrix), "--channel", "release", "--format", "json", *extra)
    assert result.out.strip(), result.err
    return result, json.loads(result.out)


def kinds(report: dict[str, Any]) -> set[tuple[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return {(f["kind"], f["key"]) for f in findings}


def test_a_fresh_release_is_clean_in_both_channels(
    released: Released, run: Callable[..., Result]
) -> None:
    result, report = verify(run, released)
    assert result.code == 0, result.out + result.err
    assert report["clean"] is True and report["findings"] == []
    stores = report["stores"]
    assert isinstance(stores, list) and stores[0]["name"] == "main"
    assert stores[0]["objects_checked"] == 6  # 3 wheels + 3 sidecars, each hashed
    table = run("verify", str(released.matrix), "--channel", "test")
    assert table.code == 0 and "0 finding(s)" in table.out


def test_every_tampering_is_named_and_repaired_from_verified_sources(
    released: Released, run: Callable[..., Result]
) -> None:
    s = released.store
    s.delete(CUDA)  # missing
    s.write(EXTRA, s.read(CPU_LINUX))  # an artifact no manifest vouches for
    s.write(CPU_LINUX, flip(s.read(CPU_LINUX)))  # drifted: same size, other bytes
    s.write(CPU_WIN + ".metadata", s.read(CPU_WIN + ".metadata") + b"Requires-Dist: evil\n")
    page = json.loads(s.read("whl/cpu/rfdemo/index.json"))
    page["files"][1]["hashes"]["sha256"] = "0" * 64  # advertise another hash
    s.write("whl/cpu/rfdemo/index.json", json.dumps(page).encode())
    s.delete("whl/cpu/rfdemo/index.html")  # a page removed

    result, report = verify(run, released)
    assert result.code == 4, result.err
    assert "finding(s) in the release channel" in result.err
    found = kinds(report)
    assert {
        ("missing", CUDA),
        ("extra", EXTRA),
        ("drifted", CPU_LINUX),
        ("sidecar", CPU_WIN + ".metadata"),
        ("page", "whl/cpu/rfdemo/index.json"),
        ("page", "whl/cpu/rfdemo/index.html"),
        ("page", "whl/cu128/rfdemo/index.json"),  # links the missing wheel
    } <= found
    assert {k for k, _ in found} == {"missing", "extra", "drifted", "sidecar", "page"}
    findings = {(f["kind"], f["key"]): f for f in report["findings"]}
    drifted = findings[("drifted", CPU_LINUX)]
    if released.kind == "local":  # the edit kept inode, size and mtime: the hash cache is fooled
        recorded = LocalStore(released.matrix.parent / ".relforge" / "store").sha256(CPU_LINUX)
        assert recorded == drifted["expected_sha256"] != drifted["found_sha256"]
    assert set(drifted) == {
        "kind",
        "store",
        "key",
        "message",
        "expected_sha256",
        "found_sha256",
        "cell_id",
    }
    assert drifted["store"] == "main" and drifted["cell_id"] == "wheel-linux-x86_64-py3.11-cpu"
    assert drifted["expected_sha256"] != drifted["found_sha256"]
    assert "0000000000" in findings[("page", "whl/cpu/rfdemo/index.json")]["message"]
    assert "missing" in findings[("page", "whl/cpu/rfdemo/index.html")]["message"]

    table = run("verify", str(released.matrix), "--channel", "release")
    assert table.code == 4 and "drifted" in table.out and CPU_LINUX in table.out
    assert "--repair" in table.err

    before = released.everything()
    dry, plan = verify(run, released, "--repair")
    assert dry.code == 4
    assert released.everything() == before  # a dry run changes nothing, byte for byte
    repair = plan["repair"]
    assert isinstance(repair, dict) and repair["executed"] is False
    assert repair["unrepairable"] == []
    actions = {(a["action"], a["key"]): a for a in repair["actions"]}
    assert actions[("restore", CUDA)]["source"].startswith("backup ")
    assert actions[("restore", CPU_LINUX)]["replaces"] == drifted["found_sha256"]
    assert actions[("restore", CPU_WIN + ".metadata")]["source"] == "the verified wheel's METADATA"
    assert ("quarantine", EXTRA) in actions
    assert {("rebuild-pages", "whl/cpu"), ("rebuild-pages", "whl/cu128")} <= set(actions)
    dry_table = run("verify", str(released.matrix), "--channel", "release", "--repair")
    assert "dry run: nothing was written" in dry_table.out
    assert released.everything() == before

    done, after = verify(run, released, "--repair", "--execute")
    assert done.code == 0, done.out + done.err
    assert after["after"]["clean"] is True
    again, report = verify(run, released)
    assert again.code == 0 and report["clean"] is True
    # nothing is lost: the replaced bytes and the unvouched file sit in quarantine
    everything = released.everything()
    quarantined = [k for k in everything if "relforge/quarantine/release/" in k]
    assert any(k.endswith(CPU_LINUX) for k in quarantined)
    assert any(k.endswith(EXTRA) for k in quarantined)
    # a rerun is a no-op
    rerun, _ = verify(run, released, "--repair", "--execute")
    assert rerun.code == 0 and released.everything() == everything


def test_a_tampered_backup_is_never_a_source(
    released: Released, run: Callable[..., Result]
) -> None:
    s, b = released.store, released.backup
    s.write(CPU_LINUX, flip(s.read(CPU_LINUX)))
    b.write(f"rfdemo/1.0.0/{CPU_LINUX}", flip(b.read(f"rfdemo/1.0.0/{CPU_LINUX}")))
    # the backup is bad, the test channel still holds the validated bytes: that is used
    dry, plan = verify(run, released, "--repair")
    assert dry.code == 4
    (action,) = [a for a in plan["repair"]["actions"] if a["key"] == CPU_LINUX]
    assert action["source"] == "test channel"

    # the attacker changed the test channel too: no verified source is left
    test_key = CPU_LINUX.replace("whl/", "whl/test/", 1)
    s.write(test_key, flip(s.read(test_key)))
    before = released.everything()
    refused, plan = verify(run, released, "--repair", "--execute")
    assert refused.code == 4, refused.out + refused.err
    bad = plan["repair"]["unrepairable"]
    assert (bad[0]["kind"], bad[0]["key"]) == ("drifted", CPU_LINUX)
    assert "no verified source" in bad[0]["reason"] and "backup" in bad[0]["reason"]
    assert released.everything() == before  # the drifted folder's pages were not re-blessed
    page = json.loads(s.read("whl/cpu/rfdemo/index.json"))
    assert all(f["hashes"]["sha256"] != plan["findings"][0]["found_sha256"] for f in page["files"])


def test_pruned_nightlies_are_no_finding_but_a_kept_one_deleted_is(
    tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text("publishing:\n  nightly_keep: 2\n"), encoding="utf-8")
    cpu = "wheel-linux-x86_64-py3.11-cpu"
    for day in ("20260101", "20260102", "20260103"):
        work = tmp_path / f"build-{day}"
        wheel = build_wheel(work, version=f"1.0.0.dev{day}+cpu", plat="manylinux_2_28_x86_64")
        manifest = work / "relforge-manifest.json"
        write_manifest(manifest, {cpu: wheel}, channel="nightly")
        published = run(
            "publish",
            str(matrix),
            "--channel",
            "nightly",
            "--manifest",
            str(manifest),
            "--partial",
            "--execute",
        )  # one cell of three: on the pages and counted for nightly_keep
        assert published.code == 0, published.err
    clean = run("verify", str(matrix), "--channel", "nightly")
    assert clean.code == 0, clean.out + clean.err  # 20260101 was pruned by publish
    kept = "whl/nightly/cpu/rfdemo-1.0.0.dev20260102+cpu-py3-none-manylinux_2_28_x86_64.whl"
    (tmp_path / ".relforge" / "store" / kept).unlink()
    result = run("verify", str(matrix), "--channel", "nightly", "--format", "json")
    assert result.code == 4
    assert ("missing", kept) in kinds(json.loads(result.out))
