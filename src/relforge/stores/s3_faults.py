"""What an S3 failure means: worth another try (`is_transient`), and, when the tries are spent
or it was never transient, which one-paragraph error a user sees (`translate`).

Environment faults — an endpoint that cannot be reached or resolved, credentials the service
refuses, a service that keeps failing, an endpoint that does not answer as S3 does (an HTTP
error without an S3 error code, redirects without end), a request the service refuses — are
`EnvironmentFault` (exit 6); a bucket that does not exist is configuration (exit 2); a missing
object and anything that is not a service's answer are unexpected (exit 1).  Messages name the
store, the key and the endpoint, never credentials.
"""

from __future__ import annotations

import http.client
from typing import Any, Protocol

from relforge.envfaults import environment_fault, is_environment_fault
from relforge.errors import ConfigError, EnvironmentFault, RefusedError, RelforgeError
from relforge.stores.retry import DigestMismatch, TransientFault

CONDITION_FAILED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
MISSING = {"404", "NoSuchKey", "NotFound"}
# Error codes S3 and S3-compatible services answer when another try may succeed.
TRANSIENT_CODES = {
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
    "RequestTimeoutException",
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "BandwidthLimitExceeded",
    "PriorRequestNotComplete",
}
REFUSED_CREDENTIALS = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
    "403",
}


class _Store(Protocol):
    @property
    def url(self) -> str: ...

    @property
    def config_key(self) -> str: ...

    @property
    def endpoint_url(self) -> str: ...

    @property
    def policy(self) -> Any: ...


def code(exc: BaseException) -> str:
    """The S3 error code of a ClientError ("" for anything else)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Code", ""))


def _status(exc: BaseException) -> int:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return 0
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def _transient_types() -> tuple[type[BaseException], ...]:
    from botocore import exceptions as boto
    from urllib3 import exceptions as urllib3

    return (
        TransientFault,
        boto.ConnectionError,  # refused, unresolvable, connect timeout
        boto.HTTPClientError,  # reset, closed, read timeout, body cut mid-stream
        boto.IncompleteReadError,  # fewer bytes than Content-Length
        boto.FlexibleChecksumError,  # bytes that do not match the response checksum
        urllib3.ProtocolError,
        urllib3.ReadTimeoutError,
        http.client.IncompleteRead,
        ConnectionError,  # the builtin: ConnectionResetError and friends
        TimeoutError,
    )


def is_transient(exc: BaseException) -> bool:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        status = _status(exc)
        return code(exc) in TRANSIENT_CODES or status >= 500 or status == 429
    return isinstance(exc, _transient_types())


def _endpoint(store: _Store) -> str:
    return store.endpoint_url or "the AWS S3 endpoint"


def translate(exc: BaseException, store: _Store, action: str, key: str) -> BaseException:
    """The error a user sees for `exc`, raised by `action` on `key` of `store`."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    if isinstance(exc, RelforgeError):
        return exc
    if isinstance(exc, DigestMismatch):  # every try read the same wrong bytes, or worse
        return RefusedError(
            f"{store.url}/{key}: the bytes read have sha256 {exc.got}, not the sha256 stored "
            f"with the object ({exc.expected}), on each of {store.policy.attempts} reads",
            hint="the object was changed outside relforge; inspect it before going on",
        )
    where = f"{action} {store.url}/{key}"
    attempts = store.policy.attempts
    network_key = "publishing.s3_endpoint_url" if store.endpoint_url else store.config_key
    if isinstance(exc, NoCredentialsError):
        return ConfigError(
            f"no AWS credentials for {store.url}",
            hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a role) in the environment",
        )
    if isinstance(exc, ClientError):
        name = code(exc)
        message = f"{where}: {name} {exc.response.get('Error', {}).get('Message', '')}".rstrip()
        if name == "NoSuchBucket":
            return ConfigError(message, key=store.config_key)
        if name in REFUSED_CREDENTIALS:
            return EnvironmentFault(
                f"{message} (the service refused the credentials or their permissions)",
                key=store.config_key,
                hint="check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the role) in the "
                f"environment and that they may read and write {store.url}",
            )
        if is_transient(exc):
            return EnvironmentFault(
                f"{message}: {_endpoint(store)} still failed after {attempts} attempts",
                key=network_key,
                hint="the service is overloaded or down; rerun later (a rerun finishes the work)",
            )
        return _refused_request(exc, store, where, message, network_key)
    if _redirect_loop(exc):
        return EnvironmentFault(
            f"{where}: {_endpoint(store)} answers with a redirect that leads nowhere else "
            "(botocore followed it without end)",
            key=network_key,
            hint=f"check {network_key}: the S3 API endpoint itself (https:// when the service "
            "redirects http:// to it), not a website in front of the bucket",
        )
    if is_transient(exc):
        cause = str(getattr(exc, "kwargs", {}).get("error", "") or exc)
        if "NameResolutionError" in cause or "Failed to resolve" in cause:
            what = f"cannot resolve the host of {_endpoint(store)}"
            hint = f"check {network_key} and the DNS of this machine"
        elif isinstance(exc, TransientFault | BotoCoreError) and not _is_connect(exc):
            what = f"the connection to {_endpoint(store)} kept failing ({exc})"
            hint = "the network or the service is unreliable; rerun (a rerun finishes the work)"
        else:
            what = f"cannot reach {_endpoint(store)} ({exc})"
            hint = f"check {network_key}, the network and any proxy or firewall in between"
        return EnvironmentFault(
            f"{where}: {what} after {attempts} attempts", key=network_key, hint=hint
        )
    if isinstance(exc, BotoCoreError):
        return RelforgeError(f"{where}: {exc}")
    if isinstance(exc, OSError) and is_environment_fault(exc):  # the local side of a transfer
        return environment_fault(exc, f"{where}: cannot write the local copy")
    return exc


def not_s3(store: _Store, action: str, key: str, what: str) -> EnvironmentFault:
    """A success answer that S3 would never give (a web server that answers 200 to anything)."""
    network_key = "publishing.s3_endpoint_url" if store.endpoint_url else store.config_key
    return EnvironmentFault(
        f"{action} {store.url}/{key}: {_endpoint(store)} answered with {what}: it does not "
        "answer as an S3 service does",
        key=network_key,
        hint=f"check {network_key}: the S3 API endpoint (not a website or a proxy's page), "
        "then rerun",
    )


def _refused_request(
    exc: Any, store: _Store, where: str, message: str, network_key: str
) -> RelforgeError:
    """A ClientError that is neither transient nor about credentials or the bucket."""
    name = code(exc)
    status = _status(exc)
    if name in MISSING and status in (0, 404) and where.startswith(("get ", "head ", "copy ")):
        return RelforgeError(message)  # callers look before they read: a lost race or a bug
    if not name or name.isdigit():  # an HTTP error without an S3 error document
        return EnvironmentFault(
            f"{where}: {_endpoint(store)} answered HTTP {status or name} without an S3 error "
            "code: it does not answer as an S3 service does",
            key=network_key,
            hint=f"check {network_key}: the S3 API endpoint (not a website or a proxy's page), "
            "then rerun",
        )
    if name == "EntityTooLarge" or (name == "InvalidRequest" and "larger than" in message):
        setting = (
            "publishing.s3_part_size_mb"
            if " part " in f" {where} "
            else "publishing.s3_copy_threshold_mb"
            if where.startswith("copy ")
            else "publishing.s3_multipart_threshold_mb"
        )
        return EnvironmentFault(
            f"{message} (HTTP {status}): the request is larger than the service takes in one",
            key=setting,
            hint=f"lower {setting} below the service's limit (AWS S3 and R2 take at most 5 GiB "
            "in one request), then rerun: larger objects then go in parts",
        )
    return EnvironmentFault(
        f"{message} (HTTP {status}): the service refused the request",
        key=store.config_key,
        hint="S3-compatible services differ in what they accept (conditional writes, "
        "checksums): check that this one supports them, then rerun",
    )


def _redirect_loop(exc: BaseException) -> bool:
    """botocore's S3 redirect handler recursed: the endpoint keeps redirecting (1.44.5).  How
    deep the stack already was decides where the recursion limit strikes: in the handler (a
    RecursionError) or inside urllib3, which wraps it in a connection error."""
    import traceback

    if isinstance(exc, RecursionError):
        return any(
            frame.name == "redirect_from_error" for frame in traceback.extract_tb(exc.__traceback__)
        )
    return "maximum recursion depth exceeded" in str(exc)


def _is_connect(exc: BaseException) -> bool:
    from botocore.exceptions import ConnectionError as BotoConnectionError

    return isinstance(exc, BotoConnectionError)
