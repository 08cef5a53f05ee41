"""S3 clients share the botocore data already loaded, but not credentials or region: those are
read from the environment when each client is made, as boto3.client reads them."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.loaders import JSONFileLoader

from relforge.stores.s3client import s3_client

ENDPOINT = "http://127.0.0.1:9"  # never contacted: making a client sends no request


def test_a_second_client_reads_no_service_data_from_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    s3_client(endpoint_url=ENDPOINT, region_name="us-east-1")  # the process's first, maybe
    reads: list[str] = []
    original = JSONFileLoader.load_file

    def load_file(self: JSONFileLoader, file_path: str) -> Any:
        reads.append(file_path)
        return original(self, file_path)

    monkeypatch.setattr(JSONFileLoader, "load_file", load_file)
    client = s3_client(endpoint_url=ENDPOINT, region_name="us-east-1")
    assert client.meta.service_model.service_name == "s3"
    assert reads == []


def test_each_client_reads_credentials_and_region_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = []
    for key, region in (("AKIAFIRST", "eu-west-1"), ("AKIASECOND", "us-west-2")):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
        monkeypatch.setenv("AWS_DEFAULT_REGION", region)
        made.append(s3_client(endpoint_url=ENDPOINT))
    assert [c.meta.region_name for c in made] == ["eu-west-1", "us-west-2"]
    # botocore keeps the signing credentials on the client's request signer
    assert [c._request_signer._credentials.access_key for c in made] == ["AKIAFIRST", "AKIASECOND"]
