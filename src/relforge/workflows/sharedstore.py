"""Jobs that publish need a store every job reaches.

Each job of a generated workflow runs on a fresh runner: a `file://` store (the embedded default
`.relforge/store` included) is a folder on that runner's throw-away disk, so each upload job
would write into its own copy and the index job would start from an empty one — uploads that
"pass" while nothing is published.  The generator refuses upload and index jobs for such a store
and names the two ways out.
"""

from __future__ import annotations

from relforge.errors import ConfigError
from relforge.matrix.schema import Matrix

_FIX = (
    "set publishing.store to s3://BUCKET/PREFIX (with publishing.s3_endpoint_url for R2, MinIO "
    "or another S3-compatible service), or generate the workflows without upload jobs: "
    "`relforge workflows generate … --no-upload`"
)


def check_shared_store(matrix: Matrix) -> None:
    """ConfigError unless the store and every mirror are S3 stores."""
    publishing = matrix.publishing
    store = publishing.store
    if not store.startswith("s3://"):
        shown = store or "the embedded default (file://.relforge/store)"
        raise ConfigError(
            f"the generated upload and index jobs need a store every runner reaches; {shown} is a "
            "folder on each runner's own disk, so every upload would go to a different copy and "
            "nothing would be published",
            where=publishing.at("store") if store else matrix.span,
            key="publishing.store",
            hint=_FIX,
        )
    for i, mirror in enumerate(publishing.mirrors):
        if not mirror.url.startswith("s3://"):
            raise ConfigError(
                f"mirror {mirror.name!r} is {mirror.url}, a folder on each runner's own disk: the "
                "generated upload jobs would fill a copy that is thrown away",
                where=mirror.at("url"),
                key=f"publishing.mirrors[{i}].url",
                hint="make the mirror an s3:// store, or generate with --no-upload",
            )
