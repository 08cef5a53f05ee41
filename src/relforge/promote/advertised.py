"""The record of the versions a channel's pages advertise:
`relforge/advertised/<channel>/<project>/<version>.json`, one object each, written by the run
that first put the version on the pages (whole, or incomplete with `--partial`).

Once advertised, a version stays advertised: a later matrix that expects more cells of its
release (a Python added) does not take a shipped version off the pages, and a version put there
with `--partial` is not taken off again by the next `index`, `publish`, `promote` or `yank`
run without the flag (it keeps being reported as incomplete).  Deleting the record withdraws
the version until it is whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore

ADVERTISED = "relforge/advertised"


def advertised_key(channel: str, project: str, version: str) -> str:
    return f"{ADVERTISED}/{channel}/{project}/{version}.json"


def read_advertised(store: ObjectStore, channel: str, project: str) -> dict[str, str]:
    """version → "whole" or "partial", for every version the channel's pages advertised."""
    base = f"{ADVERTISED}/{channel}/{project}/"
    out = {}
    for info in store.list(base):
        name = info.key[len(base) :]
        if not name.endswith(".json") or "/" in name:
            continue
        try:
            data = json.loads(store.get(info.key))
            kind = "whole" if data.get("whole") is True else "partial"
        except (ValueError, AttributeError):
            kind = "partial"  # unreadable: still advertised, and reported as incomplete
        out[name.removesuffix(".json")] = kind
    return out


def write_advertised(
    store: ObjectStore,
    channel: str,
    project: str,
    version: str,
    *,
    whole: bool,
    verified: Iterable[str],
    missing: dict[str, str],
) -> str:
    """Record that `version` is on the pages (`missing`: the cells it lacked then).  The bytes
    depend on the facts only, so a resumed run and an uninterrupted one end alike."""
    key = advertised_key(channel, project, version)
    data = {
        "version": version,
        "channel": channel,
        "whole": whole,
        "verified": sorted(verified),
        "missing": dict(sorted(missing.items())),
    }
    store.write(key, (json.dumps(data, indent=1) + "\n").encode(), content_types.JSON)
    return key
