"""publish → index → pip install → promote → PyPI stage → twine upload → pip install, against
a real moto S3 server and a real pypiserver; reruns are no-ops; differing bytes are refused."""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3, PyPIServer, pip_install
from tests.promote_kit import build_wheel, matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow

LINUX_CPU = "wheel-linux-x86_64-py3.11-cpu"
LINUX_CUDA = "wheel-linux-x86_64-py3.11-cu128"


def s3_matrix(tmp_path: Path, s3: S3, extra: str = "") -> Path:
    publishing = textwrap.dedent(f"""\
        publishing:
          store: s3://{s3.bucket}/dl
          s3_endpoint_url: {s3.endpoint}
          backup_store: s3://{s3.bucket}-backup/tags
        """)
    path = tmp_path / "matrix.yaml"
    path.write_text(matrix_text(publishing + extra), encoding="utf-8")
    s3.client().create_bucket(Bucket=f"{s3.bucket}-backup")
    return path


def objects(s3: S3, bucket: str | None = None) -> dict[str, tuple[str, str]]:
    """key → (sha256 of the bytes, sha256 metadata) of every object in the bucket."""
    client: Any = s3.client()
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket or s3.bucket):
        for obj in page.get("Contents", ()):
            got = client.get_object(Bucket=bucket or s3.bucket, Key=obj["Key"])
            data = got["Body"].read()
            out[obj["Key"]] = (hashlib.sha256(data).hexdigest(), got["Metadata"].get("sha256", ""))
    return out


def is_page(key: str) -> bool:
    """Index pages and the page-set markers: each page set carries its own generation id."""
    markers = ("/.relforge-pages.json", "/.relforge-root-pages.json")
    return key.endswith(("/index.html", "/index.json", "/", *markers))


def without_pages(found: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {k: v for k, v in found.items() if not is_page(k)}


def page_files(s3: S3, bucket: str | None = None) -> dict[str, object]:
    """key → the files (or projects) each PEP 691 page lists, without its generation id."""
    client: Any = s3.client()
    out: dict[str, object] = {}
    for key in objects(s3, bucket):
        if key.endswith("/index.json"):
            body = client.get_object(Bucket=bucket or s3.bucket, Key=key)["Body"].read()
            page = json.loads(body)
            out[key] = page.get("files", page.get("projects"))
    return out


@pytest.fixture
def released(tmp_path: Path) -> dict[str, Path]:
    return release_wheels(tmp_path / "work")


def test_publish_index_install_promote_stage_upload(
    tmp_path: Path,
    s3: S3,
    pypiserver: PyPIServer,
    released: dict[str, Path],
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, released)

    dry = run("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    assert dry.code == 0, dry.err
    assert "dry run" in dry.out and "6 to write" in dry.out
    assert objects(s3) == {}  # a dry run writes nothing anywhere
    assert not (tmp_path / ".relforge").exists()

    done = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert done.code == 0, done.err
    stored = objects(s3)
    for key, (actual, claimed) in stored.items():
        assert actual == claimed, key  # every object carries its verified sha256
    assert "dl/whl/test/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl" in stored
    assert "dl/whl/test/cpu/rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl.metadata" in stored
    assert "dl/whl/test/cu128/rfdemo/" in stored  # the folder page plain S3 serves
    assert "dl/whl/test/cu128/rfdemo/index.json" in stored

    # real pip, from moto's S3 endpoint (path-style URL)
    base = f"{s3.endpoint}/{s3.bucket}/dl/whl"
    assert (
        pip_install(tmp_path, f"{base}/test/cpu/", "rfdemo==1.0.0+cpu") == f"{LINUX_CPU} 1.0.0+cpu"
    )
    assert pip_install(tmp_path, f"{base}/test/cu128/", "rfdemo") == f"{LINUX_CUDA} 1.0.0+cu128"

    again = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert again.code == 0 and "everything was already in place" in again.out
    assert objects(s3) == stored

    promoted = run(
        "promote",
        str(matrix),
        "--version",
        "1.0.0",
        "--from",
        "test",
        "--to",
        "release",
        "--execute",
    )
    assert promoted.code == 0, promoted.err
    after = objects(s3)
    for key in stored:
        if "/whl/test/" in key and key.endswith((".whl", ".metadata")):
            release_key = key.replace("/whl/test/", "/whl/")
            assert after[release_key] == stored[key]  # the same bytes, not a rebuild
    backups = objects(s3, f"{s3.bucket}-backup")
    assert len(backups) == 6 and all(a == c for a, c in backups.values())
    assert (
        pip_install(tmp_path, f"{base}/cu128/", "rfdemo==1.0.0+cu128")
        == f"{LINUX_CUDA} 1.0.0+cu128"
    )
    rerun = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert rerun.code == 0 and "everything was already in place" in rerun.out

    staged = run("pypi", "stage", str(matrix), "--version", "1.0.0", "--execute")
    assert staged.code == 0, staged.err
    staging = {k: v for k, v in objects(s3).items() if "/pypi-staging/1.0.0/" in k}
    assert sorted(k.rsplit("/", 1)[1] for k in staging) == [
        "rfdemo-1.0.0-py3-none-manylinux_2_28_x86_64.whl",
        "rfdemo-1.0.0-py3-none-win_amd64.whl",
    ]
    assert (
        "everything was already in place"
        in run("pypi", "stage", str(matrix), "--version", "1.0.0", "--execute").out
    )

    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    args = ("pypi", "upload", str(matrix), "--version", "1.0.0", "--repository-url", pypiserver.url)
    dry_upload = run(*args)
    assert dry_upload.code == 0 and "upload " in dry_upload.out
    assert list(pypiserver.packages.iterdir()) == []
    uploaded = run(*args, "--execute")
    assert uploaded.code == 0, uploaded.err
    assert pypiserver.password not in uploaded.out + uploaded.err
    assert sorted(p.name for p in pypiserver.packages.iterdir()) == sorted(
        k.rsplit("/", 1)[1] for k in staging
    )
    assert pip_install(tmp_path, pypiserver.simple, "rfdemo==1.0.0") == f"{LINUX_CUDA} 1.0.0+cu128"
    second = run(*args, "--execute")
    assert second.code == 0 and "uploaded 0 file(s)" in second.out


def test_differing_bytes_are_refused_at_s3_and_pypi(
    tmp_path: Path,
    s3: S3,
    pypiserver: PyPIServer,
    released: dict[str, Path],
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, released)
    assert (
        run(
            "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
        ).code
        == 0
    )
    before = objects(s3)

    # an RC rebuilt with other bytes under the same file name: refused, nothing written
    other = tmp_path / "rebuild"
    rebuilt = build_wheel(other, version="1.0.0+cpu", plat="manylinux_2_28_x86_64", payload="rc2")
    shutil.copy(rebuilt, released[LINUX_CPU])
    write_manifest(manifest, released)
    refused = run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )
    assert refused.code == 5, refused.out + refused.err
    assert (
        "never overwritten" in refused.err and "rfdemo-1.0.0+cpu-py3-none-manylinux" in refused.err
    )
    assert objects(s3) == before

    # a different object already at a release key: promotion refuses before copying anything
    client: Any = s3.client()
    squatter = "dl/whl/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"
    client.put_object(Bucket=s3.bucket, Key=squatter, Body=b"not the validated wheel")
    before = objects(s3)
    blocked = run("promote", str(matrix), "--version", "1.0.0", "--execute")
    assert blocked.code == 5, blocked.out + blocked.err
    assert squatter.removeprefix("dl/") in blocked.err
    assert objects(s3) == before
    assert objects(s3, f"{s3.bucket}-backup") == {}
    client.delete_object(Bucket=s3.bucket, Key=squatter)

    # PyPI already has the Linux file name with other bytes: nothing is uploaded at all
    write_manifest(manifest, {k: v for k, v in released.items() if k != LINUX_CPU})
    # (the test channel holds the first build of LINUX_CPU; promote the others from the file)
    assert (
        run(
            "promote",
            str(matrix),
            "--version",
            "1.0.0",
            "--manifest",
            str(manifest),
            "--partial",
            "--execute",
        ).code
        == 0
    )
    assert run("pypi", "stage", str(matrix), "--version", "1.0.0", "--execute").code == 0
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    impostor_dir = tmp_path / "impostor"
    impostor = build_wheel(impostor_dir, version="1.0.0", plat="manylinux_2_28_x86_64", payload="x")
    from twine.commands.upload import upload
    from twine.settings import Settings

    upload(
        Settings(
            repository_url=pypiserver.url,
            username=pypiserver.username,
            password=pypiserver.password,
            non_interactive=True,
            disable_progress_bar=True,
        ),
        [str(impostor)],
    )
    args = ("pypi", "upload", str(matrix), "--version", "1.0.0", "--repository-url", pypiserver.url)
    stopped = run(*args, "--execute")
    assert stopped.code == 5, stopped.out + stopped.err
    assert "rfdemo-1.0.0-py3-none-manylinux_2_28_x86_64.whl" in stopped.err
    assert sorted(p.name for p in pypiserver.packages.iterdir()) == [impostor.name]
