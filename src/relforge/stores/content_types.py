"""The content types objects are stored with, one name each (S3 serves an object with the type it
was written with, so a page or sidecar written with the wrong one is served wrong)."""

from __future__ import annotations

OCTET_STREAM = "application/octet-stream"  # wheels, archives: anything without a type of its own
JSON = "application/json"  # manifests, records, page-set markers, the site's JSON
HTML = "text/html; charset=utf-8"  # PEP 503 pages, the site's pages
TEXT = "text/plain; charset=utf-8"  # PEP 658 metadata sidecars, `.sha256` files
