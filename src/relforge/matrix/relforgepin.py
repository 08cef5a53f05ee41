"""`ci.relforge`: the one relforge every generated job installs, pinned so that no job can get
another one.

Two forms are accepted, both parsed by `packaging`:
- `relforge==X.Y.Z` — exactly one released version from the runner's index;
- `relforge @ https://…/relforge-X.Y.Z-py3-none-any.whl#sha256=<64 hex>` — a direct URL whose
  bytes the job's installer (uv) checks against the hash before installing (http only to a
  loopback host, or file:).

Anything looser (a range, a wildcard, `===`, a URL without its sha256, a VCS URL, markers, another
distribution) is refused: whoever could publish a matching release would run code in jobs that
hold `id-token: write`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.matrix.schema import PinnedRelforge

_SHA256 = re.compile(r"sha256=([0-9a-f]{64})\Z")
_FORMS = "relforge==X.Y.Z, or relforge @ https://…/relforge-X.Y.Z-py3-none-any.whl#sha256=<hex>"


class PinProblem(ValueError):
    """A `ci.relforge` value that is not an exact pin; `hint` says what would be."""

    def __init__(self, message: str, hint: str = f"write it as {_FORMS}") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True, kw_only=True)
class RelforgePin:
    """A checked `ci.relforge`: what pip is given, and how it is pinned."""

    requirement: str
    version: str = ""  # for relforge==X.Y.Z
    url: str = ""  # for a direct URL (with its #sha256= fragment)
    sha256: str = ""

    @property
    def summary(self) -> str:
        if self.url:
            return f"relforge from {self.url.split('#', 1)[0]} (sha256 {self.sha256[:12]}…)"
        return f"relforge {self.version} from the runner's index"


def parse_pinned_relforge(text: str) -> PinnedRelforge:
    """The loader's parser for `ci.relforge` (raises PinProblem, a ValueError)."""
    return PinnedRelforge(relforge_pin(text.strip(" \t")).requirement)


def relforge_pin(text: str) -> RelforgePin:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise PinProblem(f"{text!r} is not a PEP 508 requirement: {exc}") from None
    if canonicalize_name(req.name) != "relforge":
        raise PinProblem(f"{text!r} installs {req.name!r}, not relforge")
    if req.marker is not None:
        raise PinProblem(
            f"{text!r} has an environment marker: a job whose marker is false would run without "
            "relforge",
            hint="leave the marker out",
        )
    if req.extras:
        raise PinProblem(f"{text!r} asks for extras; relforge has none", hint="leave them out")
    if req.url:
        return _url_pin(text, req.url)
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        raise PinProblem(
            f"{text!r} does not pin one version: any release it admits could run in your jobs"
        )
    try:
        version = Version(specs[0].version)
    except InvalidVersion:
        raise PinProblem(f"{text!r} does not name a PEP 440 version") from None
    if version.local:
        raise PinProblem(f"{text!r} pins a local version, which no public index serves")
    return RelforgePin(requirement=f"relforge=={version}", version=str(version))


def _url_pin(text: str, url: str) -> RelforgePin:
    parts = urlsplit(url)
    if "+" in parts.scheme:
        raise PinProblem(
            f"{text!r} is a VCS URL, which no installer can check against a hash",
            hint=f"build a wheel of that commit and pin it by URL and sha256: {_FORMS}",
        )
    if parts.scheme not in ("https", "http", "file"):
        raise PinProblem(f"{text!r}: a URL with scheme {parts.scheme!r} cannot be installed")
    if parts.scheme == "http" and not _loopback(parts.hostname or ""):
        raise PinProblem(
            f"{text!r} fetches relforge over plain http from {parts.hostname}",
            hint="use https (http is accepted for a loopback index only)",
        )
    found = _SHA256.match(parts.fragment)
    if found is None:
        raise PinProblem(
            f"{text!r} has no #sha256=<64 lowercase hex digits> fragment: the installer could "
            "not check the file it downloads",
            hint="append #sha256=$(sha256sum relforge-X.Y.Z-py3-none-any.whl) to the URL",
        )
    if not parts.path.endswith(".whl"):
        raise PinProblem(
            f"{text!r} does not name a wheel: an sdist would run its build code in every job",
            hint="point the URL at relforge's .whl file",
        )
    return RelforgePin(requirement=f"relforge @ {url}", url=url, sha256=found.group(1))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
