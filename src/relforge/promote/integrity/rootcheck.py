"""`relforge verify` of the channel-root pages (relforge.promote.index.rootpages): the root project
pages of the channel's project must link each vouched file the store holds, once, into one of
the channel's own variant folders, with the manifest's sha256 (and core-metadata digest); the
root index must list the project; with `root_index: false` no root page may list it."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Set
from urllib.parse import unquote

from relforge.promote.integrity.pagecheck import (
    Link,
    PageProblem,
    Want,
    check_page_pair,
    check_root_pages,
    html_targets,
    json_links,
    link_problem,
    read_page,
)
from relforge.promote.rootspec import RootSpec
from relforge.stores.objectstore import ObjectStore


def _json_targets(data: bytes) -> dict[str, Link] | None:
    """href → link of a JSON page (the URL is the key: the folder matters here)."""
    links = json_links(data)
    if links is None:
        return None
    try:
        urls = {str(f["filename"]): str(f["url"]) for f in json.loads(data)["files"]}
    except (ValueError, KeyError, TypeError):
        return None
    return {urls.get(name, name): link for name, link in links.items()}


def check_channel_root(
    store: ObjectStore,
    spec: RootSpec,
    project: str,
    want: Mapping[str, Mapping[str, Want]],
    present: Mapping[str, Set[str]],
) -> list[PageProblem]:
    """`want`: folder → filename → what the pages must say; `present`: folder → the project's
    files the store holds there."""
    base = f"{spec.prefix}/{project}/"
    if not spec.enabled:
        return [
            PageProblem(key=key, message=f"a root page of {project} while root_index is false")
            for key in (base + "index.json", base + "index.html")
            if read_page(store, key) is not None
        ]
    listed_anywhere = {
        n for f in spec.folders for n in set(want.get(f, {})) & present.get(f, set())
    }
    if not listed_anywhere:
        return []

    def targets_of(name: str, key: str, data: bytes) -> list[PageProblem]:
        links = (_json_targets if name == "index.json" else html_targets)(data)
        if links is None:
            return [PageProblem(key=key, message="the page cannot be read")]
        return _check(key, base, spec, links, want, present, listed_anywhere)

    out = check_page_pair(store, base, targets_of)
    out += check_root_pages(store, spec.prefix, project)
    return out


def _check(
    key: str,
    base: str,
    spec: RootSpec,
    links: Mapping[str, Link],
    want: Mapping[str, Mapping[str, Want]],
    present: Mapping[str, Set[str]],
    expected: Set[str],
) -> list[PageProblem]:
    out = []
    seen: set[str] = set()
    for url, link in sorted(links.items()):
        target = posixpath.normpath(posixpath.join(base, unquote(url)))
        folder, _, name = target.rpartition("/")
        if folder not in spec.folders:
            out.append(
                PageProblem(
                    key=key,
                    message=f"links {url}, outside the {spec.channel} channel's variant folders",
                )
            )
            continue
        wanted = want.get(folder, {}).get(name)
        held = name in present.get(folder, set())
        problem = link_problem(key, url, link, wanted, held=held)
        if problem is not None:
            out.append(problem)
        if name in seen:
            out.append(PageProblem(key=key, message=f"lists {name} more than once"))
        seen.add(name)
    for name in sorted(set(expected) - seen):
        out.append(PageProblem(key=key, message=f"does not list {name}"))
    return out
