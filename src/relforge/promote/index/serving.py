"""Does `project.download_url` serve the pages a store holds?  A warning, never a failure.

After `publish`/`index`, each indexed folder's page is fetched from
`<download_url>/<folder>/` (a short timeout, a few folders at most) and compared with the
`index.html` the store holds.  Any difference (an HTTP error, other bytes, a network fault) is a
warning: a CDN may still hold an older page, and the store itself was written correctly.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from relforge.errors import RelforgeError
from relforge.stores.objectstore import ObjectStore

TIMEOUT = 3.0  # seconds per page: a check, not a download
MAX_FOLDERS = 3
# What pip sends: HTML is what a plain static server gives for a folder URL.
ACCEPT = "text/html"


@dataclass(frozen=True, kw_only=True)
class Probe:
    folder: str
    url: str
    problem: str  # empty when the URL serves the store's page


def _redact(url: str) -> str:
    """The URL without user:password@ (never print credentials)."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}"


def _fetch(url: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return int(response.status), response.read(4 << 20)
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""


def _compare(store: ObjectStore, key: str, url: str) -> str:
    """Empty when `url` serves the bytes of the store's `key`, else what is wrong."""
    try:
        expected = store.get(key)
    except RelforgeError:
        return "the store has no index page here yet"
    try:
        status, body = _fetch(url)
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, bad URLs
        return f"cannot be fetched ({getattr(exc, 'reason', exc)})"
    if status != 200:
        hint = " (a bucket without a read policy? see `relforge store policy`)"
        return f"HTTP {status}" + (hint if status == 403 else "")
    if body != expected:
        return (
            "serves another page than the store holds (another store, or a cache that has "
            "not refreshed yet)"
        )
    return ""


def probe_folder(store: ObjectStore, download_url: str, folder: str) -> Probe:
    """Fetch `<download_url>/<folder>/` and its first project's page (which lists sha256s,
    so another store's look-alike folder page does not pass) and compare them with the
    store's pages."""
    base = folder.strip("/")
    root = f"{download_url.rstrip('/')}/{base}/"
    pages = [(f"{base}/index.html", root)]
    for info in store.list(f"{base}/"):
        project, _, page = info.key[len(base) + 1 :].partition("/")
        if page == "index.html":
            pages.append((info.key, f"{root}{project}/"))
            break
    for key, url in pages:
        problem = _compare(store, key, url)
        if problem:
            return Probe(folder=folder, url=_redact(url), problem=problem)
    return Probe(folder=folder, url=_redact(root), problem="")


def serving_warnings(store: ObjectStore, download_url: str, folders: Sequence[str]) -> list[str]:
    """Warnings (one line each) for the folders `download_url` does not serve; stops probing
    at the first network fault, so an unreachable host costs one timeout."""
    if not download_url:
        return []
    out = []
    for folder in list(folders)[:MAX_FOLDERS]:
        probe = probe_folder(store, download_url, folder)
        if probe.problem:
            out.append(
                f"warning: project.download_url does not serve {folder}/: {probe.url} "
                f"{probe.problem}"
            )
            if probe.problem.startswith("cannot be fetched"):
                break
    return out
