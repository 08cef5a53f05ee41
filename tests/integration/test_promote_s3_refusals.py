"""Promotion on a real S3 wire API (moto) when the store is not as relforge left it: a changed
source object, a missing backup bucket.  Each is refused or reported before anything is copied."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects, s3_matrix
from tests.promote_kit import release_wheels, write_manifest

pytestmark = pytest.mark.slow


@pytest.fixture
def published(
    tmp_path: Path, s3: S3, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    args = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    assert run(*args, "--execute").code == 0
    return matrix


def test_a_changed_source_object_stops_the_promotion_before_any_copy(
    published: Path, s3: S3, run: Callable[..., Result]
) -> None:
    client: Any = s3.client()
    key = "dl/whl/test/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"
    data = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    client.put_object(Bucket=s3.bucket, Key=key, Body=data[:-4] + b"XXXX")  # same size
    before = objects(s3)
    for extra in ((), ("--execute",)):
        refused = run("promote", str(published), "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert key.removeprefix("dl/") in refused.err and "nothing was copied" in refused.err
    assert objects(s3) == before
    assert objects(s3, f"{s3.bucket}-backup") == {}


def test_a_missing_backup_bucket_names_the_backup_store(
    published: Path, s3: S3, run: Callable[..., Result]
) -> None:
    published.write_text(published.read_text().replace(f"{s3.bucket}-backup", "rf-no-such"))
    missing = run("promote", str(published), "--version", "1.0.0")
    assert missing.code == 2, missing.out + missing.err
    assert "publishing.backup_store" in missing.err and "NoSuchBucket" in missing.err
    assert "AWS_SECRET" not in missing.err and "testing" not in missing.err


def test_an_object_that_appears_between_plan_and_copy_is_not_overwritten(
    published: Path, s3: S3
) -> None:
    """moto (like several S3-compatible services) ignores IfNoneMatch on CopyObject, so a
    server-side copy must not be trusted to refuse an existing destination by itself."""
    from relforge.errors import RefusedError
    from relforge.matrix.load import load_matrix
    from relforge.promote.plans.promote import PromoteRequest, plan_promote
    from relforge.promote.plans.storeplan import execute

    request = PromoteRequest(
        matrix=load_matrix(published), version="1.0.0", source="test", target="release"
    )
    plan = plan_promote(request)
    client: Any = s3.client()
    squatter = "dl/whl/cpu/rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"
    client.put_object(Bucket=s3.bucket, Key=squatter, Body=b"written meanwhile")
    with pytest.raises(RefusedError, match="appeared meanwhile"):
        execute(plan, lambda line: None, workers=1)
    body = client.get_object(Bucket=s3.bucket, Key=squatter)["Body"].read()
    assert body == b"written meanwhile"
