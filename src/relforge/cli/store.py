"""`relforge store`: facts about serving the object store (read-only)."""

from __future__ import annotations

import click

from relforge.matrix import load_matrix
from relforge.output import print_foreign_json


@click.group()
def store() -> None:
    """Serving the store that publish and promote fill."""


@store.command()
@click.argument("file", metavar="FILE")
@click.option(
    "--cloudfront-distribution",
    default="",
    metavar="ARN",
    help="Grant read to this CloudFront distribution only (origin access control) instead of "
    "to everyone.",
)
def policy(file: str, cloudfront_distribution: str) -> None:
    """Print the least S3 bucket policy that serves publishing.store: s3:GetObject on the
    channel, native-archive and site prefixes only; manifests, PyPI staging and backups stay
    private.  FILE is the matrix file.  Apply it with
    `aws s3api put-bucket-policy --bucket B --policy file://policy.json`."""
    from relforge.promote import bucket_policy

    matrix = load_matrix(file)
    # AWS's policy language: it refuses keys it does not know
    print_foreign_json(bucket_policy(matrix, cloudfront_distribution=cloudfront_distribution))
