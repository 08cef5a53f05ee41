"""`publishing.mirrors`: publish and promote fill an S3 mirror on a second moto server (another
endpoint, as an R2 bucket beside AWS) and a directory mirror with the same bytes and pages;
a conflicting object on a mirror refuses the whole run; `verify` checks parity and repairs a
mirror from the main store."""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import BIN, S3, free_port, pip_install, start_server, stop_server
from tests.integration.test_promote_flow import is_page
from tests.integration.verify_kit import LocalRaw, S3Raw, flip
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow

CPU_LINUX = "whl/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"
CUDA = "whl/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def second_moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto2") / "moto.log"
    proc = start_server([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], url, log)
    yield url
    stop_server(proc)


def setup(tmp_path: Path, s3: S3, second_moto: str) -> tuple[Path, S3Raw, S3Raw, LocalRaw, Path]:
    mirror = S3(second_moto, f"mirror-{uuid.uuid4().hex[:10]}")
    mirror.create_public_bucket(mirror.bucket)
    s3.client().create_bucket(Bucket=f"{s3.bucket}-backup")
    publishing = textwrap.dedent(f"""\
        publishing:
          store: s3://{s3.bucket}/dl
          s3_endpoint_url: {s3.endpoint}
          backup_store: s3://{s3.bucket}-backup/tags
          mirrors:
            - name: r2
              url: s3://{mirror.bucket}/dl
              endpoint_url: {second_moto}
            - {{name: disk, url: "file://{tmp_path / "disk-mirror"}"}}
        """)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(publishing), encoding="utf-8")
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    return (
        matrix,
        S3Raw(s3.client(), s3.bucket, "dl"),
        S3Raw(mirror.client(), mirror.bucket, "dl"),
        LocalRaw(tmp_path / "disk-mirror"),
        manifest,
    )


def without_prefix(snapshot: dict[str, bytes], prefix: str = "dl/") -> dict[str, bytes]:
    return {k.removeprefix(prefix): v for k, v in snapshot.items()}


def _listed(objects: dict[str, bytes]) -> dict[str, object]:
    """page key → the files (or projects) the PEP 691 page lists."""
    out: dict[str, object] = {}
    for key, data in objects.items():
        if key.endswith("/index.json"):
            page = json.loads(data)
            out[key] = page.get("files", page.get("projects"))
    return out


def test_publish_promote_fill_mirrors_and_verify_checks_parity(
    tmp_path: Path,
    s3: S3,
    second_moto: str,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix, main, r2, disk, manifest = setup(tmp_path, s3, second_moto)
    publish = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    dry = run(*publish)
    assert dry.code == 0, dry.err
    assert "(mirror r2)" in dry.out and "(mirror disk)" in dry.out
    assert r2.snapshot() == {} and disk.snapshot() == {}

    assert run(*publish, "--execute").code == 0
    promoted = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert promoted.code == 0, promoted.err
    ours = without_prefix(main.snapshot())
    theirs = without_prefix(r2.snapshot())
    # every object byte for byte; every page lists the same files (each store's page set
    # carries its own generation id)
    assert {k: v for k, v in theirs.items() if not is_page(k)} == {
        k: v for k, v in ours.items() if not is_page(k)
    }
    assert _listed(theirs) == _listed(ours) != {}
    on_disk = disk.snapshot()
    for key, data in ours.items():
        if key.endswith((".whl", ".metadata")) or key.startswith("relforge/manifests/"):
            assert on_disk[key] == data, key
    assert "whl/cu128/rfdemo/index.html" in on_disk
    # real pip installs from the mirror's own endpoint
    url = f"{second_moto}/{r2.bucket}/dl/whl/cu128/"
    assert pip_install(tmp_path, url, "rfdemo==1.0.0+cu128").endswith("1.0.0+cu128")

    rerun = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert rerun.code == 0 and "everything was already in place" in rerun.out

    clean = run("verify", str(matrix), "--channel", "release", "--format", "json")
    assert clean.code == 0, clean.out + clean.err
    report = json.loads(clean.out)
    assert [s["name"] for s in report["stores"]] == ["main", "r2", "disk"]

    # the mirror drifts from the main store
    r2.delete(CUDA)
    r2.write(CPU_LINUX, flip(r2.read(CPU_LINUX)))
    (stored,) = [k for k in ours if k.startswith("relforge/manifests/release/")]
    r2.delete(stored)
    result = run("verify", str(matrix), "--channel", "release", "--format", "json")
    assert result.code == 4
    found = {(f["kind"], f["store"], f["key"]) for f in json.loads(result.out)["findings"]}
    assert {
        ("missing", "r2", CUDA),
        ("drifted", "r2", CPU_LINUX),
        ("parity", "r2", stored),
    } <= found
    assert all(store == "r2" for _, store, _ in found)
    assert run("verify", str(matrix), "--channel", "release", "--store", "main").code == 0
    assert run("verify", str(matrix), "--channel", "release", "--store", "disk").code == 0
    unknown = run("verify", str(matrix), "--channel", "release", "--store", "r3")
    assert unknown.code == 2 and "main, r2, disk" in unknown.err

    repaired = run(
        "verify", str(matrix), "--channel", "release", "--store", "r2", "--repair", "--execute"
    )
    assert repaired.code == 0, repaired.out + repaired.err
    assert "← store main" in repaired.out
    assert run("verify", str(matrix), "--channel", "release").code == 0
    assert r2.read(CPU_LINUX) == main.read(CPU_LINUX)

    # the main store, its backup and its test channel all changed: a mirror's verified copy
    good = main.read(CPU_LINUX)
    backup = S3Raw(s3.client(), f"{s3.bucket}-backup", "tags")
    for raw, key in (
        (main, CPU_LINUX),
        (main, CPU_LINUX.replace("whl/", "whl/test/", 1)),
        (backup, f"rfdemo/1.0.0/{CPU_LINUX}"),
    ):
        raw.write(key, flip(raw.read(key)))
    fixed = run(
        "verify", str(matrix), "--channel", "release", "--store", "main", "--repair", "--execute"
    )
    assert fixed.code == 0, fixed.out + fixed.err
    assert "← store r2" in fixed.out
    assert main.read(CPU_LINUX) == good

    # a yank marks every store's pages from the main store's record, so all stay clean
    yank = ("yank", str(matrix), "--version", "1.0.0", "--channel", "release")
    done = run(*yank, "--cell", "wheel-linux-x86_64-py3.11-cpu", "--reason", "bad", "--execute")
    assert done.code == 0, done.out + done.err
    for copy in (r2, disk):
        page = copy.read("whl/cpu/rfdemo/index.html").decode()
        assert 'data-yanked="bad"' in page
    after = run("verify", str(matrix), "--channel", "release")
    assert after.code == 0, after.out + after.err


def test_a_conflicting_object_on_a_mirror_refuses_the_whole_publish(
    tmp_path: Path,
    s3: S3,
    second_moto: str,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix, main, r2, disk, manifest = setup(tmp_path, s3, second_moto)
    squatter = CPU_LINUX.replace("whl/", "whl/test/", 1)
    r2.write(squatter, b"not the validated wheel")
    refused = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert refused.code == 5, refused.out + refused.err
    assert "never overwritten" in refused.err and squatter in refused.err
    assert main.snapshot() == {} and disk.snapshot() == {}
    assert list(r2.snapshot()) == [f"dl/{squatter}"]
