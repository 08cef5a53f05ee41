"""Bounded, jittered, counted retries (relforge.stores.retry) and which S3 failures count as
transient (relforge.stores.s3_faults), on botocore's own exception classes."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    IncompleteReadError,
    NoCredentialsError,
    ResponseStreamingError,
)

from relforge.errors import ConfigError, EnvironmentFault
from relforge.stores.retry import (
    RetryCounter,
    RetryPolicy,
    TransientFault,
    call_with_retries,
    total_retries,
)
from relforge.stores.s3 import S3Store
from relforge.stores.s3_faults import is_transient, translate


def _client_error(code: str, status: int) -> ClientError:
    response = {
        "Error": {"Code": code, "Message": f"{code} happened"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "PutObject")


def _failing(times: int, exc: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return "done"

    return calls, call


def test_transient_failures_are_retried_counted_and_paused_with_jitter() -> None:
    calls, call = _failing(3, TransientFault("cut"))
    counter = RetryCounter()
    pauses: list[float] = []
    policy = RetryPolicy(attempts=5, base=0.1, cap=0.3)
    got = call_with_retries(
        call,
        transient=lambda exc: isinstance(exc, TransientFault),
        policy=policy,
        counter=counter,
        sleep=pauses.append,
        rng=random.Random(3),
    )
    assert got == "done" and len(calls) == 4 and counter.count == 3
    assert len(pauses) == 3
    for n, pause in enumerate(pauses):  # full jitter below a doubling ceiling, capped
        assert 0 <= pause <= min(0.3, 0.1 * 2**n)
    assert len(set(pauses)) == 3


def test_retries_are_bounded_and_the_last_failure_is_raised() -> None:
    calls, call = _failing(99, TransientFault("still cut"))
    counter = RetryCounter()
    with pytest.raises(TransientFault, match="still cut"):
        call_with_retries(
            call,
            transient=lambda exc: True,
            policy=RetryPolicy(attempts=4),
            counter=counter,
            sleep=lambda s: None,
        )
    assert len(calls) == 4 and counter.count == 3


def test_a_failure_that_is_not_transient_is_never_retried() -> None:
    calls, call = _failing(1, ValueError("a bug"))
    counter = RetryCounter()
    with pytest.raises(ValueError):
        call_with_retries(
            call,
            transient=is_transient,
            policy=RetryPolicy(),
            counter=counter,
            sleep=lambda s: None,
        )
    assert len(calls) == 1 and counter.count == 0


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (_client_error("SlowDown", 503), True),
        (_client_error("InternalError", 500), True),
        (_client_error("RequestTimeout", 400), True),
        (_client_error("503", 503), True),  # a HEAD has no body to name the code
        (_client_error("ThrottlingException", 400), True),
        (_client_error("Anything", 429), True),
        (_client_error("PreconditionFailed", 412), False),
        (_client_error("NoSuchKey", 404), False),
        (_client_error("AccessDenied", 403), False),
        (_client_error("BadDigest", 400), False),
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), True),
        (IncompleteReadError(actual_bytes=1, expected_bytes=2), True),
        (ResponseStreamingError(error="Connection broken: IncompleteRead"), True),
        (ConnectionResetError(104, "Connection reset by peer"), True),
        (NoCredentialsError(), False),
        (ValueError("a bug"), False),
    ],
)
def test_which_failures_are_transient(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_what_a_user_sees_when_the_tries_are_spent() -> None:
    store = S3Store(bucket="b", prefix="dl", endpoint_url="http://127.0.0.1:1")
    slow = translate(_client_error("SlowDown", 503), store, "put", "whl/x.whl")
    assert isinstance(slow, EnvironmentFault) and "s3://b/dl/whl/x.whl" in str(slow)
    assert "after 8 attempts" in str(slow)
    refused = translate(_client_error("InvalidAccessKeyId", 403), store, "list", "whl/")
    assert isinstance(refused, EnvironmentFault) and "refused the credentials" in str(refused)
    missing = translate(_client_error("NoSuchBucket", 404), store, "list", "whl/")
    assert isinstance(missing, ConfigError) and missing.exit_code == 2
    odd = translate(_client_error("BadDigest", 400), store, "put", "k")
    # an S3 error the service gave for a request it would not take: the service's answer
    assert isinstance(odd, EnvironmentFault) and "refused the request" in str(odd)
    down = translate(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), store, "head", "k")
    assert isinstance(down, EnvironmentFault) and "cannot reach http://127.0.0.1:1" in str(down)
    assert down.key == "publishing.s3_endpoint_url"


def test_total_retries_counts_each_store_once() -> None:
    class Counted:
        retries = 2

    one, other = Counted(), Counted()
    assert total_retries([one, one, other, None, object()]) == 4
