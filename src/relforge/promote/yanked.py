"""The yank record of a channel (PEP 592): which files the channel's pages mark yanked, and why.

One JSON object per channel at `relforge/yanked/<channel>.json`, replaced atomically:

    {"format": 1, "channel": "release",
     "files": {"whl/cpu/demo-1.0.0+cpu-cp312-cp312-linux_x86_64.whl": "broken ABI"}}

The index reads it whenever it builds a page, so `relforge index`, publish and promote keep a
yank; a file's reason is part of its project's fingerprint, so a change of the record makes
exactly the affected project pages stale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from relforge.errors import RefusedError
from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore

FORMAT = 1
PREFIX = "relforge/yanked"


def record_key(channel: str) -> str:
    return f"{PREFIX}/{channel}.json"


def read_yanked(store: ObjectStore, channel: str) -> dict[str, str]:
    """Object key → reason of every file yanked in the channel (empty without a record)."""
    key = record_key(channel)
    if store.head(key) is None:
        return {}
    try:
        data = json.loads(store.get(key))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not an object")
        return {str(k): str(v) for k, v in files.items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise RefusedError(
            f"{store.url}/{key} is not a yank record ({exc})",
            hint="no page is written without it (that would unyank its files); it is written "
            "by `relforge yank`: restore it, or remove it and yank again",
        ) from None


def write_yanked(store: ObjectStore, channel: str, files: Mapping[str, str]) -> None:
    """Replace the channel's record (removed when nothing is yanked any more)."""
    key = record_key(channel)
    if not files:
        store.delete(key)
        return
    body = {"format": FORMAT, "channel": channel, "files": dict(sorted(files.items()))}
    store.write(key, (json.dumps(body, indent=1) + "\n").encode(), content_types.JSON)
