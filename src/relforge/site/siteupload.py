"""Publish a rendered site to the project's store, beside the channels: `site/<file>`.

Dry run by default (the plan says which files change); with `--execute` the changed files are
written, `index.html` last, so a reader never gets a page whose data is not there yet.  A rerun
after success finds every file identical and writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from relforge.stores import content_types
from relforge.stores.objectstore import ObjectStore

SITE_PREFIX = "site"
CONTENT_TYPES = {
    ".html": content_types.HTML,
    ".json": content_types.JSON,
}


@dataclass(frozen=True, kw_only=True)
class SiteUpload:
    name: str
    key: str
    state: Literal["upload", "identical"]


def _order(name: str) -> tuple[bool, str]:
    return (name == "index.html", name)  # the page that reads the others goes last


def plan_site_upload(store: ObjectStore, files: Mapping[str, str]) -> list[SiteUpload]:
    plan = []
    for name in sorted(files, key=_order):
        key = f"{SITE_PREFIX}/{name}"
        same = store.head(key) is not None and store.get(key) == files[name].encode("utf-8")
        plan.append(SiteUpload(name=name, key=key, state="identical" if same else "upload"))
    return plan


def apply_site_upload(store: ObjectStore, files: Mapping[str, str], plan: list[SiteUpload]) -> int:
    written = 0
    for item in plan:
        if item.state == "upload":
            suffix = item.name[item.name.rfind(".") :]
            content_type = CONTENT_TYPES.get(suffix, content_types.OCTET_STREAM)
            store.write(item.key, files[item.name].encode("utf-8"), content_type)
            written += 1
    return written
