"""The channel-root index with real installers: `pip --index-url <store>/whl/test` and
`uv pip install --index-url …` find every variant's files through `whl/test/rfdemo/`, served by
a static HTTP server from the local store and by moto's S3 endpoint; the release root never
lists the nested test channel's files; a yank shows on the root; verify catches a root page
edited by hand and --repair rewrites it; two files with one name are refused; opting out
removes the root pages."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from relforge.deps.mirrorrecord import MirroredFile, write_record
from relforge.stores.local import LocalStore
from tests.conftest import Result
from tests.integration.conftest import S3, pip_install
from tests.integration.test_promote_flow import s3_matrix
from tests.integration.test_yank import uv_install
from tests.promote_kit import matrix_text, release_wheels, write_manifest

Run = Callable[..., Result]
pytestmark = pytest.mark.slow
LINUX_CPU = "wheel-linux-x86_64-py3.11-cpu"
LINUX_CUDA = "wheel-linux-x86_64-py3.11-cu128"


def publish(run: Run, tmp_path: Path, matrix: Path, version: str) -> None:
    work = tmp_path / f"work-{version}"
    manifest = work / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(work, version=version))
    argv = ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)]
    done = run(*argv, "--execute")
    assert done.code == 0, done.out + done.err


def test_pip_and_uv_install_from_the_channel_root_over_http(
    tmp_path: Path,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    publish(run, tmp_path, matrix, "1.0.0")
    promoted = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert promoted.code == 0, promoted.out + promoted.err
    assert "whl/ (channel-root pages" in promoted.out
    publish(run, tmp_path, matrix, "1.0.1")  # in test only
    store = tmp_path / ".relforge" / "store"
    url = static_server(store)

    # the test channel's root lists cpu and cu128: pip takes the newest, a pin takes cpu
    assert pip_install(tmp_path, f"{url}/whl/test", "rfdemo") == f"{LINUX_CUDA} 1.0.1+cu128"
    assert pip_install(tmp_path, f"{url}/whl/test/", "rfdemo==1.0.1+cpu") == (
        f"{LINUX_CPU} 1.0.1+cpu"
    )
    assert uv_install(tmp_path, f"{url}/whl/test", "rfdemo==1.0.1+cpu") == "1.0.1+cpu"
    # the release root (whl/, which holds whl/test/ too) lists the release channel only
    assert pip_install(tmp_path, f"{url}/whl", "rfdemo") == f"{LINUX_CUDA} 1.0.0+cu128"
    assert uv_install(tmp_path, f"{url}/whl", "rfdemo") == "1.0.0+cu128"
    release_root = (store / "whl" / "rfdemo" / "index.html").read_text()
    assert "1.0.1" not in release_root and "../test/" not in release_root
    assert release_root.count("<a ") == 3

    # a yank of 1.0.1 in the test channel marks the root too; installers skip it unpinned
    yank = run(
        "yank", str(matrix), "--version", "1.0.1", "--channel", "test", "--reason", "bad",
        "--execute",
    )  # fmt: skip
    assert yank.code == 0, yank.out + yank.err
    test_root = store / "whl" / "test" / "rfdemo" / "index.html"
    assert test_root.read_text().count('data-yanked="bad"') == 3
    assert pip_install(tmp_path, f"{url}/whl/test", "rfdemo") == f"{LINUX_CUDA} 1.0.0+cu128"
    assert uv_install(tmp_path, f"{url}/whl/test", "rfdemo") == "1.0.0+cu128"

    # verify: clean; then a root page pointing a link at the release folder is a finding
    clean = run("verify", str(matrix), "--channel", "test")
    assert clean.code == 0, clean.out + clean.err
    good = test_root.read_text()
    test_root.write_text(good.replace('href="../cpu/', 'href="../../cpu/', 1))
    found = run("verify", str(matrix), "--channel", "test")
    assert found.code == 4, found.out + found.err
    assert "whl/test/rfdemo/index.html" in found.out + found.err
    assert "outside the test channel's variant folders" in found.out + found.err
    repaired = run("verify", str(matrix), "--channel", "test", "--repair", "--execute")
    assert repaired.code == 0, repaired.out + repaired.err
    assert "../../cpu/" not in test_root.read_text()
    assert test_root.read_text().count('data-yanked="bad"') == 3
    index = run("index", str(matrix), "--channel", "test", "--execute")
    assert index.code == 0 and "whl/test/ (root of the test channel): up to date" in index.out

    # a variant page and the root page both edited: the root never copies the edited variant
    # page (index refuses, exit 5: no stored manifest explains the variant page); --repair
    # rebuilds the variant page first, then the root
    variant = store / "whl/test/cpu/rfdemo/index.json"
    cpu_sha = hashlib.sha256(
        (store / "whl/test/cpu/rfdemo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl").read_bytes()
    ).hexdigest()
    variant.write_text(variant.read_text().replace(cpu_sha, "0" * 64))
    test_root.write_text(test_root.read_text().replace(cpu_sha, "0" * 64))
    # (the plan of cpu/ finds its committed page changed: no stale root is needed to see it)
    refused = run("index", str(matrix), "--channel", "test", "--execute")
    assert refused.code == 5, refused.out + refused.err
    assert "no stored manifest explains" in refused.err
    assert "whl/test/cpu/rfdemo/index.json: lists rfdemo-1.0.1+cpu" in refused.err
    both = run("verify", str(matrix), "--channel", "test", "--repair", "--execute")
    assert both.code == 0, both.out + both.err
    assert run("verify", str(matrix), "--channel", "test").code == 0
    assert "0" * 64 not in test_root.read_text() + variant.read_text()

    # opting out removes the root pages (not the variant pages)
    matrix.write_text(
        matrix_text().replace(
            "test: {version_scheme: final, prefix: whl/test}",
            "test: {version_scheme: final, prefix: whl/test, root_index: false}",
        ),
        encoding="utf-8",
    )
    dry = run("index", str(matrix), "--channel", "test")
    assert dry.code == 0 and "removed (root_index is false)" in dry.out
    assert test_root.exists()
    off = run("index", str(matrix), "--channel", "test", "--execute")
    assert off.code == 0, off.out + off.err
    assert not test_root.exists() and not (store / "whl/test/index.html").exists()
    served = requests.get(f"{url}/whl/test/rfdemo/", timeout=10)  # http.server lists the dir
    assert served.status_code == 404 or ".whl" not in served.text
    assert (store / "whl/test/cpu/rfdemo/index.html").exists()
    assert (store / "whl/rfdemo/index.html").exists()  # the release channel keeps its root


def _dependency(store: Any, folder: str, data: bytes) -> None:
    name = "numpy-2.0-py3-none-any.whl"
    store.put_if_absent(f"{folder}/{name}", data, hashlib.sha256(data).hexdigest())
    mirrored = MirroredFile(
        filename=name,
        name="numpy",
        version="2.0",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        upstream_url=f"https://upstream.invalid/{name}",
        cells=(),
    )
    write_record(store, "test", folder, [mirrored])


def test_one_name_for_two_files_in_two_folders_is_refused(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    publish(run, tmp_path, matrix, "1.0.0")
    store = LocalStore(tmp_path / ".relforge" / "store")
    _dependency(store, "whl/test/cpu", b"numpy built once")
    _dependency(store, "whl/test/cu128", b"numpy built once")
    same = run("index", str(matrix), "--channel", "test", "--execute")
    assert same.code == 0, same.out + same.err
    numpy = (store.root / "whl/test/numpy/index.html").read_text()
    assert numpy.count("<a ") == 1 and 'href="../cpu/numpy-2.0-py3-none-any.whl' in numpy
    before = numpy
    # the cu128 copy replaced by other bytes (and its record with them): refused, naming both
    (store.root / "whl/test/cu128/numpy-2.0-py3-none-any.whl").unlink()
    (store.root / "relforge/deps/whl/test/cu128.json").unlink()
    _dependency(store, "whl/test/cu128", b"numpy built twice")
    refused = run("index", str(matrix), "--channel", "test", "--execute")
    assert refused.code == 5, refused.out + refused.err
    assert "whl/test/cpu/" in refused.err and "whl/test/cu128/" in refused.err
    assert (store.root / "whl/test/numpy/index.html").read_text() == before


def test_pip_and_uv_install_from_the_channel_root_on_s3(
    tmp_path: Path, s3: S3, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    publish(run, tmp_path, matrix, "1.0.0")
    client: Any = s3.client()
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket)["Contents"]}
    for key in ("rfdemo/", "rfdemo/index.html", "rfdemo/index.json", "", "index.html"):
        assert f"dl/whl/test/{key}" in keys, key
    assert "dl/whl/test/.relforge-root-pages.json" in keys
    base = f"{s3.endpoint}/{s3.bucket}/dl/whl/test"
    assert pip_install(tmp_path, base, "rfdemo") == f"{LINUX_CUDA} 1.0.0+cu128"
    assert pip_install(tmp_path, base, "rfdemo==1.0.0+cpu") == f"{LINUX_CPU} 1.0.0+cpu"
    assert uv_install(tmp_path, base, "rfdemo==1.0.0+cpu") == "1.0.0+cpu"

    # a root page replaced by hand (a forged hash) is a verify finding
    page = client.get_object(Bucket=s3.bucket, Key="dl/whl/test/rfdemo/")["Body"].read()
    cpu = "rfdemo-1.0.0%2Bcpu-py3-none-manylinux_2_28_x86_64.whl#sha256="
    at = page.index(cpu.encode()) + len(cpu)
    forged = page[:at] + b"0" * 64 + page[at + 64 :]
    client.put_object(Bucket=s3.bucket, Key="dl/whl/test/rfdemo/", Body=forged)
    found = run("verify", str(matrix), "--channel", "test")
    assert found.code == 4, found.out + found.err
    assert "dl/whl/test/rfdemo/" in found.out + found.err or "whl/test/rfdemo/" in found.out
    assert "folder object differs from index.html" in found.out + found.err
