"""How verify learns an object's sha256 on S3 (moto): by default from the bytes; with
--trust-service-checksums from the service's ChecksumSHA256 — which moto, unlike AWS, takes
from the client unchecked, the reason it is not the default."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from relforge.stores.content import read_content
from relforge.stores.s3 import S3Store
from tests.integration.conftest import S3

pytestmark = pytest.mark.slow


def b64(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_service_checksums_are_used_only_when_asked_and_bytes_decide_by_default(s3: S3) -> None:
    client: Any = s3.client()
    store = S3Store(bucket=s3.bucket, endpoint_url=s3.endpoint)
    data = b"validated bytes"
    true_sha = hashlib.sha256(data).hexdigest()

    client.put_object(Bucket=s3.bucket, Key="computed", Body=data, ChecksumAlgorithm="SHA256")
    trusted = read_content(store, "computed", trust_service=True)
    assert trusted is not None and trusted.from_service and trusted.sha256 == true_sha
    assert trusted.size == len(data)

    # no service checksum (how botocore sends relforge's own writes to moto): downloaded
    client.put_object(Bucket=s3.bucket, Key="plain", Body=data, Metadata={"sha256": "0" * 64})
    plain = read_content(store, "plain", trust_service=True)
    assert plain is not None and not plain.from_service and plain.sha256 == true_sha

    # a forged checksum: AWS would refuse the PUT (BadDigest); moto stores it
    forged = b"attacker bytes"
    client.put_object(
        Bucket=s3.bucket,
        Key="forged",
        Body=forged,
        ChecksumAlgorithm="SHA256",
        ChecksumSHA256=b64(data),
    )
    lied = read_content(store, "forged", trust_service=True)
    assert lied is not None and lied.sha256 == true_sha  # the service's word, wrong on moto
    honest = read_content(store, "forged")
    assert honest is not None and honest.sha256 == hashlib.sha256(forged).hexdigest()
    assert read_content(store, "absent") is None
    assert read_content(store, "absent", trust_service=True) is None
