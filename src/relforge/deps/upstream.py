"""The sha256 an upstream index publishes for each file of a project: read from its project
page (PEP 691 JSON when the index negotiates it, else the PEP 503 `#sha256=` link fragments),
independently of pip, which computes a hash itself for a link that carries none.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import unquote, urljoin, urlsplit

from relforge.deps.resolve import redact
from relforge.errors import EnvironmentFault
from relforge.simplepages import hrefs

TIMEOUT = 30
ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.1"
)


def _filename(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def published_hashes(index_url: str, project: str) -> dict[str, str | None]:
    """filename → the sha256 the index's page gives for it (None when it gives none)."""
    url = urljoin(index_url.rstrip("/") + "/", f"{project}/")
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            kind = response.headers.get("Content-Type", "")
            body = response.read()
    except (OSError, ValueError) as exc:
        raise EnvironmentFault(f"cannot read {redact(url)}: {exc}") from None
    out: dict[str, str | None] = {}
    if "json" in kind:
        for f in json.loads(body).get("files", []):
            out[str(f.get("filename"))] = f.get("hashes", {}).get("sha256")
        return out
    for href in hrefs(body.decode("utf-8", errors="replace")):
        fragment = urlsplit(href).fragment
        name, _, value = fragment.partition("=")
        out[_filename(href)] = value if name == "sha256" and value else None
    return out
