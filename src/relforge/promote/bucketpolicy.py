"""The least S3 bucket policy that serves a store: public `s3:GetObject` on the channel and
archive prefixes (and the install-selector site) only.

Everything else relforge keeps in the bucket stays private: stored manifests and dependency
records (`relforge/`), PyPI staging (`pypi-staging/`) and backups (`publishing.backup_store`, by
default `<store>/backup`).  A prefix that would expose one of those, or that holds an IAM
wildcard (`*`, `?`) or a policy variable (`${…}`), is refused rather than widened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relforge.errors import RefusedError, Span, UsageError
from relforge.matrix.schema import CHANNEL_NAMES, Matrix
from relforge.promote.channel import MANIFESTS, STAGING
from relforge.site.siteupload import SITE_PREFIX
from relforge.stores.objectstore import DEFAULT_STORE

PRIVATE = ("relforge", STAGING)  # relative to the store's prefix
_UNSAFE = ("*", "?", "$")


@dataclass(frozen=True, kw_only=True)
class PublicPrefix:
    """A bucket-relative prefix anyone may read, and the matrix key it came from."""

    prefix: str
    key: str
    where: Span | None = None


def _s3_parts(url: str, key: str) -> tuple[str, str]:
    if not url.startswith("s3://"):
        raise UsageError(
            f"{key} is {url!r}: a bucket policy applies to an s3:// store only",
            key=key,
            hint="serve a file:// store's whl/, libtorch/ and site/ folders with a static "
            "server (docs/guide/serving.md); never its root",
        )
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/")


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def public_prefixes(matrix: Matrix) -> list[PublicPrefix]:
    """Channel wheel prefixes, native-archive prefixes and the site, bucket-relative, with
    prefixes inside another public prefix dropped."""
    _, base = _s3_parts(matrix.publishing.store or DEFAULT_STORE, "publishing.store")
    found: list[PublicPrefix] = []
    for name in CHANNEL_NAMES:
        spec = matrix.channels.get(name)
        for field_name in ("prefix", "libtorch_prefix"):
            value: str = getattr(spec, field_name)
            if not value.strip("/") and field_name == "libtorch_prefix":
                continue
            found.append(
                PublicPrefix(
                    prefix=_join(base, value),
                    key=f"channels.{name}.{field_name}",
                    where=spec.at(field_name),
                )
            )
    found.append(PublicPrefix(prefix=_join(base, SITE_PREFIX), key="relforge site --publish"))
    found.sort(key=lambda p: p.prefix)
    kept: list[PublicPrefix] = []
    for p in found:
        if not any(_within(p.prefix, k.prefix) for k in kept):
            kept.append(p)
    return kept


def private_prefixes(matrix: Matrix) -> list[str]:
    """Bucket-relative prefixes that must stay private (those in the store's own bucket)."""
    pub = matrix.publishing
    bucket, base = _s3_parts(pub.store or DEFAULT_STORE, "publishing.store")
    out = [_join(base, p) for p in PRIVATE]
    backup = pub.backup_store or _join(pub.store, "backup")
    if backup.startswith("s3://"):
        other, prefix = _s3_parts(backup, "publishing.backup_store")
        if other == bucket:
            out.append(prefix)
    return sorted(set(out))


def _within(key: str, prefix: str) -> bool:
    """True when `key` (a prefix or a key) is `prefix` or lies under it."""
    return not prefix or key == prefix or key.startswith(prefix + "/")


def _refuse_unsafe(public: list[PublicPrefix], private: list[str]) -> None:
    problems = []
    for p in public:
        if any(ch in p.prefix for ch in _UNSAFE):
            problems.append(f"{p.key} {p.prefix!r} holds an IAM wildcard or policy variable")
            continue
        for secret in private:
            if _within(secret, p.prefix) or _within(p.prefix, secret):
                problems.append(f"{p.key} {p.prefix or '(bucket root)'!r} would expose {secret}/")
    if problems:
        first = next((p.where for p in public if p.where is not None), None)
        raise RefusedError(
            "no policy printed: " + "; ".join(problems),
            where=first,
            hint=f"give each channel its own prefix (whl/…, libtorch/…) beside {MANIFESTS}/, "
            f"{STAGING}/ and the backups",
        )


def bucket_policy(matrix: Matrix, *, cloudfront_distribution: str = "") -> dict[str, Any]:
    """The policy document.  With a CloudFront distribution ARN, only that distribution may
    read (origin access control); otherwise anyone may (S3 website or REST endpoint)."""
    bucket, _ = _s3_parts(matrix.publishing.store or DEFAULT_STORE, "publishing.store")
    public = public_prefixes(matrix)
    _refuse_unsafe(public, private_prefixes(matrix))
    statement: dict[str, Any] = {
        "Sid": "RelforgePublicRead",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "s3:GetObject",
        "Resource": [f"arn:aws:s3:::{bucket}/{p.prefix}/*" for p in public],
    }
    if cloudfront_distribution:
        if not cloudfront_distribution.startswith("arn:aws:cloudfront::"):
            raise UsageError(
                f"{cloudfront_distribution!r} is not a CloudFront distribution ARN",
                key="--cloudfront-distribution",
                hint="arn:aws:cloudfront::ACCOUNT:distribution/ID",
            )
        statement["Sid"] = "RelforgeCloudFrontRead"
        statement["Principal"] = {"Service": "cloudfront.amazonaws.com"}
        statement["Condition"] = {"StringEquals": {"AWS:SourceArn": cloudfront_distribution}}
    return {"Version": "2012-10-17", "Statement": [statement]}
