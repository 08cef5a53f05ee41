"""The sha256 an upstream index publishes for each file of a project: read from its project
page (PEP 691 JSON when the index negotiates it, else the PEP 503 `#sha256=` link fragments),
independently of pip, which computes a hash itself for a link that carries none.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urljoin

from relforge.deps.resolve import redact
from relforge.errors import EnvironmentFault
from relforge.simplepages import ACCEPT, page_files

TIMEOUT = 30


def published_hashes(index_url: str, project: str) -> dict[str, str | None]:
    """filename → the sha256 the index's page gives for it (None when it gives none)."""
    url = urljoin(index_url.rstrip("/") + "/", f"{project}/")
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            kind = response.headers.get("Content-Type", "")
            body = response.read()
        files = page_files(body, kind, url)
    except (OSError, ValueError) as exc:
        raise EnvironmentFault(f"cannot read {redact(url)}: {exc}") from None
    return {f.filename: f.sha256 for f in files}
