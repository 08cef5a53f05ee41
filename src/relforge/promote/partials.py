"""The record of versions a release engineer put on the pages before they were whole
(`--partial`): `relforge/partial/<channel>/<project>/<version>.json`, one object each, written
by the run that advertised the version.

The decision stands until the record is deleted: a later `index`, `publish`, `promote` or
`yank` without `--partial` keeps the version on the pages (and keeps reporting it as partial)
instead of taking it off again behind the engineer's back.  Deleting the record (or the
version becoming whole) ends it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from relforge.promote.store import ObjectStore

PARTIALS = "relforge/partial"


def partial_key(channel: str, project: str, version: str) -> str:
    return f"{PARTIALS}/{channel}/{project}/{version}.json"


def read_partials(store: ObjectStore, channel: str, project: str) -> set[str]:
    """The versions recorded as advertised while partial (one listing)."""
    base = f"{PARTIALS}/{channel}/{project}/"
    return {
        info.key[len(base) :].removesuffix(".json")
        for info in store.list(base)
        if info.key.endswith(".json") and "/" not in info.key[len(base) :]
    }


def write_partial(
    store: ObjectStore,
    channel: str,
    project: str,
    version: str,
    *,
    verified: Iterable[str],
    missing: dict[str, str],
) -> str:
    """Record that `version` is on the pages while `missing` cells are not; returns the key."""
    key = partial_key(channel, project, version)
    data = {
        "version": version,
        "channel": channel,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "verified": sorted(verified),
        "missing": dict(sorted(missing.items())),
    }
    store.write(key, (json.dumps(data, indent=1) + "\n").encode(), "application/json")
    return key
