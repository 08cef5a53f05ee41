"""A folder's pages commit as one unit.

Every page written by one run carries that run's generation id; after all of a folder's pages
are written, the marker `<folder>/.relforge-pages.json` is replaced, last, naming for each
project the fingerprint its page was built from, the generation and the sha256 of its JSON
page.  A run interrupted between two page writes (a kill, a failed PUT) leaves the old marker,
whose fingerprints do not match the folder any more, so the next `index`, `publish` or
`promote` rebuilds those projects: an incomplete set is finished, never taken as up to date.
A page missing from the folder's listing also makes its project stale.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from relforge.errors import RelforgeError
from relforge.stores.objectstore import ObjectStore

MARKER = ".relforge-pages.json"


@dataclass(frozen=True, kw_only=True)
class PageRecord:
    """What one project's pages were built from, as the marker records it."""

    fingerprint: str
    generation: str
    json_sha256: str  # "" for a project with no advertised file (it has no pages)
    files: int


@dataclass(frozen=True, kw_only=True)
class Marker:
    generation: str
    projects: Mapping[str, PageRecord] = field(default_factory=dict)
    root: tuple[str, ...] = ()  # the projects the folder page lists

    def to_bytes(self) -> bytes:
        data = {
            "generation": self.generation,
            "root": list(self.root),
            "projects": {
                name: {
                    "fingerprint": r.fingerprint,
                    "generation": r.generation,
                    "json_sha256": r.json_sha256,
                    "files": r.files,
                }
                for name, r in sorted(self.projects.items())
            },
        }
        return (json.dumps(data, indent=1) + "\n").encode()


def parse_marker(data: bytes) -> Marker | None:
    """The marker, or None for anything this module did not write (the folder is rebuilt)."""
    try:
        raw: Any = json.loads(data)
        projects = {
            str(name): PageRecord(
                fingerprint=str(r["fingerprint"]),
                generation=str(r["generation"]),
                json_sha256=str(r["json_sha256"]),
                files=int(r["files"]),
            )
            for name, r in raw["projects"].items()
        }
        return Marker(
            generation=str(raw["generation"]),
            projects=projects,
            root=tuple(str(p) for p in raw["root"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def read_marker(store: ObjectStore, folder: str) -> Marker | None:
    try:
        return parse_marker(store.get(f"{folder}/{MARKER}"))
    except RelforgeError:
        return None  # gone since the listing: rebuild


def new_generation() -> str:
    """Unique per run and sortable by time: `20261123T054401Z-1a2b3c4d`."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)


def write_page(store: ObjectStore, key: str, data: bytes, content_type: str) -> None:
    store.write(key, data, content_type)
