"""Fetch a project's files from a PEP 503 simple index, with the sha256 each link carries."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import requests
from packaging.utils import canonicalize_name

from relforge.errors import EnvironmentFault, UsageError
from relforge.simplepages import hrefs
from relforge.validate.cellmatch import Artifact


def _unreachable(what: str, exc: Exception) -> EnvironmentFault:
    """The network failed (refused, unresolvable, reset, timed out, an HTTP error on a file):
    the environment's fault (exit 6), not the command line's."""
    return EnvironmentFault(
        f"{what}: {exc}",
        key="--index",
        hint="check the index URL and the network (DNS, proxy, firewall), then rerun",
    )


def project_files(index_url: str, project: str, *, timeout: float = 60.0) -> list[str]:
    """The file names a PEP 503 index lists for a project ([] when it has no such project)."""
    page_url = f"{index_url.rstrip('/')}/{canonicalize_name(project)}/"
    try:
        page = requests.get(page_url, timeout=timeout)
    except requests.RequestException as exc:
        raise _unreachable(f"cannot read {page_url}", exc) from None
    if page.status_code == 404:
        return []
    if page.status_code != 200:
        raise UsageError(f"{page_url} answered HTTP {page.status_code}", key="--index")
    return [
        unquote(urlsplit(urljoin(page_url, h)).path.rsplit("/", 1)[-1]) for h in hrefs(page.text)
    ]


def fetch_from_index(
    index_url: str, project: str, wanted: set[str], into: Path, *, timeout: float = 60.0
) -> list[Artifact]:
    """Download the files named in `wanted` that the index lists for `project` into `into`."""
    page_url = f"{index_url.rstrip('/')}/{canonicalize_name(project)}/"
    try:
        page = requests.get(page_url, timeout=timeout)
    except requests.RequestException as exc:
        raise _unreachable(f"cannot read {page_url}", exc) from None
    if page.status_code != 200:
        raise UsageError(f"{page_url} answered HTTP {page.status_code}", key="--index")
    into.mkdir(parents=True, exist_ok=True)
    out = []
    for href in hrefs(page.text):
        url = urljoin(page_url, href)
        parts = urlsplit(url)
        name = unquote(parts.path.rsplit("/", 1)[-1])
        if not name.endswith(".whl") or name not in wanted:
            continue
        fragment = dict(p.partition("=")[::2] for p in parts.fragment.split("&") if p)
        target = into / name
        digest = hashlib.sha256()
        try:
            with requests.get(
                parts._replace(fragment="").geturl(), stream=True, timeout=timeout
            ) as r:
                r.raise_for_status()
                with target.open("wb") as fh:
                    for block in r.iter_content(1 << 20):
                        fh.write(block)
                        digest.update(block)
        except requests.RequestException as exc:
            raise _unreachable(f"cannot download {url}", exc) from None
        out.append(
            Artifact(
                path=target,
                from_index=True,
                index_sha256=fragment.get("sha256"),
                sha256=digest.hexdigest(),
            )
        )
    return out
