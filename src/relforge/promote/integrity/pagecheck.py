"""Read index pages back (PEP 503 HTML, PEP 691 JSON) and compare what they advertise with what
the manifests vouch for and the store holds, for `relforge verify`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from urllib.parse import unquote

from relforge.errors import EnvironmentFault, RelforgeError
from relforge.simplepages import anchors as page_anchors
from relforge.stores.content import read_bytes
from relforge.stores.objectstore import ObjectStore


@dataclass(frozen=True, kw_only=True)
class Link:
    """What a page says about one file."""

    filename: str
    sha256: str | None
    metadata_sha256: str | None
    yanked: str | None = None  # PEP 592: the reason ("" for none) when the page marks it yanked


@dataclass(frozen=True, kw_only=True)
class Want:
    """What a page must say about one vouched file (metadata None: not checked)."""

    sha256: str
    metadata_sha256: str | None
    yanked: str | None = None  # the yank record's reason ("" for none); None: not yanked


@dataclass(frozen=True, kw_only=True)
class PageProblem:
    key: str
    message: str


def read_page(store: ObjectStore, key: str) -> bytes | None:
    """The page's bytes as served, or None when it does not exist (faults of the environment
    propagate).  Read raw: a page replaced together with its recorded hash is still a page."""
    try:
        return read_bytes(store, key)
    except EnvironmentFault:
        raise
    except RelforgeError:
        return None


def _hash_of(value: object) -> str | None:
    if isinstance(value, dict):
        found = value.get("sha256")
        return found if isinstance(found, str) else None
    return None


def json_links(data: bytes) -> dict[str, Link] | None:
    try:
        page = json.loads(data)
        files = page["files"]
        out = {}
        for f in files:
            name = f["filename"]
            meta = f.get("core-metadata", f.get("dist-info-metadata"))
            out[name] = Link(
                filename=name,
                sha256=_hash_of(f.get("hashes")),
                metadata_sha256=_hash_of(meta),
                yanked=json_yanked(f.get("yanked")),
            )
        return out
    except (ValueError, KeyError, TypeError):
        return None


def json_yanked(value: object) -> str | None:
    """PEP 691's `yanked` (false, true or a reason) as a reason, None when not yanked."""
    if value is None or value is False:
        return None
    return "" if value is True else str(value)


def html_yanked(anchor: Mapping[str, str | None]) -> str | None:
    """PEP 592's `data-yanked` (present, perhaps with a reason) as a reason, None when absent."""
    return (anchor["data-yanked"] or "") if "data-yanked" in anchor else None


def json_projects(data: bytes) -> set[str] | None:
    try:
        return {str(p["name"]) for p in json.loads(data)["projects"]}
    except (ValueError, KeyError, TypeError):
        return None


def _anchors(data: bytes) -> list[dict[str, str | None]] | None:
    try:
        return page_anchors(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _sha_attr(value: str | None) -> str | None:
    if not value or not value.startswith("sha256="):
        return None
    return value.removeprefix("sha256=")


def html_targets(data: bytes) -> dict[str, Link] | None:
    """href (without its fragment) → what an HTML page says of the file it links."""
    anchors = _anchors(data)
    if anchors is None:
        return None
    out = {}
    for a in anchors:
        url, _, fragment = (a.get("href") or "").partition("#")
        meta = a.get("data-core-metadata") or a.get("data-dist-info-metadata")
        out[url] = Link(
            filename=unquote(url.rsplit("/", 1)[-1]),
            sha256=_sha_attr(fragment),
            metadata_sha256=_sha_attr(meta),
            yanked=html_yanked(a),
        )
    return out


def html_links(data: bytes) -> dict[str, Link] | None:
    """File name → what an HTML page says of it."""
    targets = html_targets(data)
    if targets is None:
        return None
    return {link.filename: link for link in targets.values()}


def html_projects(data: bytes) -> set[str] | None:
    anchors = _anchors(data)
    if anchors is None:
        return None
    return {unquote((a.get("href") or "").rstrip("/")) for a in anchors}


def link_problem(
    key: str, shown: str, link: Link, wanted: Want | None, *, held: bool
) -> PageProblem | None:
    """What is wrong with one link of a page (`shown` names its file in the message): a file
    the store does not hold, one no manifest vouches for, or a hash other than the manifest's."""
    if not held:
        return PageProblem(key=key, message=f"links {shown}, which the store does not hold")
    if wanted is None:
        return PageProblem(key=key, message=f"advertises {shown}, which no manifest vouches for")
    if link.sha256 != wanted.sha256:
        return PageProblem(
            key=key,
            message=f"advertises sha256 {link.sha256} for {shown}, the manifest says "
            f"{wanted.sha256}",
        )
    if wanted.metadata_sha256 and link.metadata_sha256 != wanted.metadata_sha256:
        return PageProblem(
            key=key,
            message=f"advertises core-metadata sha256 {link.metadata_sha256} for {shown}, "
            f"expected {wanted.metadata_sha256}",
        )
    if link.yanked != wanted.yanked:
        return PageProblem(key=key, message=_yank_message(shown, link.yanked, wanted.yanked))
    return None


def _yank_message(shown: str, marked: str | None, recorded: str | None) -> str:
    """How a page's yank mark (PEP 592) differs from the channel's yank record."""
    if recorded is None:
        return f"marks {shown} yanked ({marked!r}), the yank record does not"
    if marked is None:
        return f"does not mark {shown} yanked, the yank record does ({recorded!r})"
    return f"marks {shown} yanked for {marked!r}, the yank record says {recorded!r}"


def check_links(
    key: str, links: Mapping[str, Link], want: Mapping[str, Want], present: Set[str]
) -> list[PageProblem]:
    """A page lies when it links a file the store lacks or no manifest vouches for, gives a
    hash other than the manifest's, or leaves out a vouched file the store holds."""
    out = []
    for name, link in sorted(links.items()):
        problem = link_problem(key, name, link, want.get(name), held=name in present)
        if problem is not None:
            out.append(problem)
    for name in sorted(set(want) & set(present) - set(links)):
        out.append(PageProblem(key=key, message=f"does not list {name}"))
    return out


def check_project_pages(
    store: ObjectStore,
    folder: str,
    project: str,
    want: Mapping[str, Want],
    present: Set[str],
    *,
    required: bool = True,
) -> list[PageProblem]:
    """The JSON and HTML pages of one project in one folder (and the folder object plain S3
    serves for the URL `folder/project/`); a missing page is a problem when `required`."""

    def links_of(name: str, key: str, data: bytes) -> list[PageProblem]:
        links = (json_links if name == "index.json" else html_links)(data)
        if links is None:
            return [PageProblem(key=key, message="the page cannot be read")]
        return check_links(key, links, want, present)

    return check_page_pair(store, f"{folder}/{project}/", links_of, required=required)


def check_page_pair(
    store: ObjectStore,
    base: str,
    check: Callable[[str, str, bytes], list[PageProblem]],
    *,
    required: bool = True,
) -> list[PageProblem]:
    """Read `base`'s index.json and index.html and `check(name, key, bytes)` each; a missing
    page is a problem when `required`; on a store that serves folders as objects, the folder's
    own object must be the HTML page."""
    out: list[PageProblem] = []
    html_page = None
    for name in ("index.json", "index.html"):
        key = base + name
        data = read_page(store, key)
        if data is None:
            if required:
                out.append(PageProblem(key=key, message="the page is missing"))
            continue
        if name == "index.html":
            html_page = data
        out += check(name, key, data)
    if store.directory_pages and html_page is not None and read_page(store, base) != html_page:
        out.append(PageProblem(key=base, message="the folder object differs from index.html"))
    return out


def check_root_pages(store: ObjectStore, folder: str, project: str) -> list[PageProblem]:
    """The folder's own pages must list the project."""

    def lists_project(name: str, key: str, data: bytes) -> list[PageProblem]:
        projects = (json_projects if name == "index.json" else html_projects)(data)
        if projects is None or project not in projects:
            return [PageProblem(key=key, message=f"does not list {project}")]
        return []

    return check_page_pair(store, f"{folder}/", lists_project)
