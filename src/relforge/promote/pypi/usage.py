"""How much of its quota a project already uses on a package index: the sizes of every file
the index lists for it (yanked ones too: yanking frees nothing), and when each was uploaded
(for PyPI's 14-day rule, relforge.promote.pypi.age).

The project's simple page is asked for as PEP 691 JSON, whose files carry their size and upload
time (PEP 700; PyPI serves it): one request.  An index that answers HTML (pypiserver) gets a
HEAD per linked file for its Content-Length and Last-Modified.  An index that cannot be read,
or does not tell a size, gives no figure — with a note saying why — and the release is checked
against the quota on its own.
"""

from __future__ import annotations

import datetime
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from packaging.utils import canonicalize_name

from relforge.promote.pypi.age import parse_last_modified, parse_upload_time
from relforge.promote.pypi.refusals import Usage
from relforge.promote.pypi.stage import public_url
from relforge.simplepages import JSON_V1, hrefs


def project_usage(index_url: str, project: str) -> Usage:
    """The project's usage on the simple index at `index_url` (never raises for the index)."""
    import requests

    url = urllib.parse.urljoin(index_url.rstrip("/") + "/", f"{canonicalize_name(project)}/")
    shown = public_url(url)
    try:
        response = requests.get(url, headers={"Accept": f"{JSON_V1}, text/html;q=0.1"}, timeout=60)
    except requests.RequestException as exc:
        return Usage(
            total=None, files=frozenset(), note=f"cannot read {shown}: {type(exc).__name__}"
        )
    if response.status_code == 404:
        return Usage(total=0, files=frozenset(), note=f"{shown} lists no file yet")
    if not response.ok:
        return Usage(
            total=None, files=frozenset(), note=f"{shown} answered HTTP {response.status_code}"
        )
    if response.headers.get("Content-Type", "").startswith(JSON_V1):
        try:
            page = response.json()
            files, uploaded = sizes_from_json(page), upload_times_from_json(page)
        except (ValueError, KeyError, TypeError, AttributeError):
            return Usage(total=None, files=frozenset(), note=f"{shown} is not a PEP 691 page")
    else:
        links = {
            urllib.parse.unquote(href.split("#")[0].rsplit("/", 1)[-1]): urllib.parse.urljoin(
                response.url, href.split("#")[0]
            )
            for href in hrefs(response.text)
        }
        with ThreadPoolExecutor(8) as pool:
            heads = list(pool.map(_head, links.values()))
        files = {name: size for name, (size, _) in zip(links, heads, strict=True)}
        uploaded = {name: when for name, (_, when) in zip(links, heads, strict=True)}
    return usage_of(files, shown, uploaded)


def sizes_from_json(page: Any) -> dict[str, object]:
    """File name → size (PEP 700; anything else when the page gives none) of a PEP 691 page."""
    return {str(f["filename"]): f.get("size") for f in page["files"]}


def upload_times_from_json(page: Any) -> dict[str, datetime.datetime | None]:
    """File name → upload time (PEP 700's `upload-time`; None when a file has none)."""
    return {str(f["filename"]): parse_upload_time(f.get("upload-time")) for f in page["files"]}


def usage_of(
    files: dict[str, object],
    shown: str,
    uploaded: dict[str, datetime.datetime | None] | None = None,
) -> Usage:
    """The usage of the listed files (unknown when one of them has no size); `uploaded` gives
    their upload times."""
    times = uploaded or {}
    unknown = [name for name, size in files.items() if not isinstance(size, int)]
    if unknown:
        return Usage(
            total=None,
            files=frozenset(files),
            note=f"{shown} gives no size for {len(unknown)} of its {len(files)} file(s)",
            uploaded=times,
        )
    total = sum(size for size in files.values() if isinstance(size, int))
    return Usage(
        total=total,
        files=frozenset(files),
        note=f"{len(files)} file(s) on {shown}",
        uploaded=times,
    )


def _head(url: str) -> tuple[int | None, datetime.datetime | None]:
    """A file's Content-Length and Last-Modified (each None when not given)."""
    import requests

    try:
        response = requests.head(url, allow_redirects=True, timeout=60)
    except requests.RequestException:
        return None, None
    if not response.ok:
        return None, None
    length = response.headers.get("Content-Length")
    size = int(length) if length and length.isdigit() else None
    return size, parse_last_modified(response.headers.get("Last-Modified"))
