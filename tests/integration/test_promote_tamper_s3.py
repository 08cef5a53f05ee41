"""Tampering with an S3 store (moto) behind relforge's back: a sidecar edited after publish, a
wheel edited together with its stored manifest, a release wheel that drifted after promotion.
Each is refused with exit 5, names the object, and nothing is promoted or advertised."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects, s3_matrix
from tests.promote_kit import release_wheels, write_manifest

pytestmark = pytest.mark.slow
CUDA = "wheel-linux-x86_64-py3.11-cu128"
WHEEL = "rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"


@pytest.fixture
def published(
    tmp_path: Path, s3: S3, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELFORGE_SIGNING_KEY", raising=False)
    matrix = s3_matrix(tmp_path, s3)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    args = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    assert run(*args, "--execute").code == 0
    return matrix


def pages(s3: S3) -> dict[str, bytes]:
    client: Any = s3.client()
    out = {}
    for key in objects(s3):
        if key.endswith(("/index.html", "/index.json", "/")):
            out[key] = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    return out


def test_an_edited_sidecar_is_refused_by_promote_and_index(
    published: Path, s3: S3, run: Callable[..., Result]
) -> None:
    client: Any = s3.client()
    key = f"dl/whl/test/cu128/{WHEEL}.metadata"
    good = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    evil = good.replace(b"\n\n", b"\nRequires-Dist: evil-package\n\n", 1)
    client.put_object(Bucket=s3.bucket, Key=key, Body=evil)
    for extra in ((), ("--execute",)):
        refused = run("promote", str(published), "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert key.removeprefix("dl/") in refused.err and "METADATA" in refused.err
    assert not [k for k in objects(s3) if k.startswith(("dl/whl/cu128", "dl/whl/cpu"))]
    assert objects(s3, f"{s3.bucket}-backup") == {}
    before = pages(s3)
    index = run("index", str(published), "--channel", "test", "--execute")
    assert index.code == 5 and key.removeprefix("dl/") in index.err
    assert pages(s3) == before
    assert all(hashlib.sha256(evil).hexdigest().encode() not in p for p in before.values())


def test_a_wheel_edited_with_its_stored_manifest_is_refused(
    published: Path, s3: S3, run: Callable[..., Result]
) -> None:
    client: Any = s3.client()
    key = f"dl/whl/test/cu128/{WHEEL}"
    other = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read() + b"\0trailing"
    sha = hashlib.sha256(other).hexdigest()
    client.put_object(Bucket=s3.bucket, Key=key, Body=other, Metadata={"sha256": sha})
    (mkey,) = [k for k in objects(s3) if k.startswith("dl/relforge/manifests/test/")]
    data = json.loads(client.get_object(Bucket=s3.bucket, Key=mkey)["Body"].read())
    data["entries"][CUDA].update(sha256=sha, size=len(other))
    client.put_object(Bucket=s3.bucket, Key=mkey, Body=json.dumps(data, indent=2).encode())
    for extra in ((), ("--execute",)):
        refused = run("promote", str(published), "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert mkey.removeprefix("dl/") in refused.err and "its key does not name" in refused.err
    assert not [k for k in objects(s3) if k.startswith(("dl/whl/cu128", "dl/whl/cpu"))]
    index = run("index", str(published), "--channel", "test", "--execute")
    assert index.code == 5
    assert all(sha.encode() not in p for p in pages(s3).values())


def test_a_release_wheel_that_drifted_is_not_advertised_by_index(
    published: Path, s3: S3, run: Callable[..., Result]
) -> None:
    assert run("promote", str(published), "--version", "1.0.0", "--execute").code == 0
    client: Any = s3.client()
    key = f"dl/whl/cu128/{WHEEL}"
    data = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    drifted = data[:-4] + b"XXXX"
    client.put_object(Bucket=s3.bucket, Key=key, Body=drifted)  # as a sync tool would
    before = pages(s3)
    for extra in ((), ("--execute",)):
        refused = run("index", str(published), "--channel", "release", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert key.removeprefix("dl/") in refused.err
    assert pages(s3) == before
    good = hashlib.sha256(data).hexdigest().encode()
    assert good in before["dl/whl/cu128/rfdemo/index.html"]
    assert all(hashlib.sha256(drifted).hexdigest().encode() not in p for p in before.values())
    client.put_object(Bucket=s3.bucket, Key=key, Body=data)  # restored
    assert run("index", str(published), "--channel", "release", "--execute").code == 0
