"""An upstream simple index as `upstream check` reads it: each project's page (PEP 691 JSON, or
PEP 503 HTML when the index offers nothing else) as versions with their files, read once per run
over one HTTP session.  A host that cannot be reached, or answers an error, is an environment
fault (exit 6) naming the host; a project the index does not have is None.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from relforge.deps.resolve import redact
from relforge.errors import EnvironmentFault, UsageError
from relforge.simplepages import ACCEPT, PageFile, page_files

PYPI = "https://pypi.org/simple/"
TIMEOUT = 30.0
READERS = 8  # project pages read at once (each mostly waits on the network)


@dataclass(frozen=True, kw_only=True)
class UpstreamVersion:
    """One version of a project on the index, with every file listed for it."""

    project: str  # canonical name
    version: Version
    files: tuple[PageFile, ...]

    def __str__(self) -> str:
        return f"{self.project} {self.version}"

    @property
    def yanked(self) -> bool:
        """PEP 592: a version is yanked when every one of its files is."""
        return all(f.yanked is not None for f in self.files)

    @property
    def yank_reason(self) -> str:
        return next((f.yanked for f in self.files if f.yanked), "")

    @property
    def wheels(self) -> tuple[PageFile, ...]:
        return tuple(f for f in self.files if f.filename.endswith(".whl"))

    def representative(self, label: str = "") -> PageFile | None:
        """The wheel that speaks for the version's files with this local label (a release's
        wheels share their Requires-Dist): one with a PEP 658 file (a small read), for Linux
        x86_64 (the PyPI default of CUDA projects), for the newest CPython, of the highest
        build number."""
        ranked = []
        for file in self.wheels:
            _, version, build, tags = parse_wheel_filename(file.filename)
            if (version.local or "") != label:
                continue
            linux = [t for t in tags if t.platform.startswith(("manylinux", "linux"))]
            rank = (
                file.metadata,
                any(t.platform.endswith("x86_64") for t in linux),
                bool(linux),
                max(_cpython(t.interpreter) for t in tags),
                build,
            )
            ranked.append((rank, file))
        return max(ranked, key=lambda item: item[0])[1] if ranked else None


def _cpython(interpreter: str) -> tuple[int, ...]:
    """cp314 → (3, 14); py3 → (3, 0): what orders wheels by the CPython they are for."""
    digits = interpreter[2:]
    return (int(digits[0]), int(digits[1:] or 0)) if digits.isdigit() else (0,)


@dataclass(frozen=True, kw_only=True)
class ProjectPage:
    """A project page: its versions, oldest first."""

    name: str
    url: str
    versions: dict[Version, UpstreamVersion]

    def available(self) -> list[Version]:
        """Final releases that are not yanked, oldest first: what a policy may follow."""
        return [v for v, r in self.versions.items() if not v.is_prerelease and not r.yanked]


def file_version(name: str, filename: str) -> Version | None:
    """The version of a wheel or sdist of project `name` (None for any other file)."""
    try:
        if filename.endswith(".whl"):
            project, version, _, _ = parse_wheel_filename(filename)
        else:
            project, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return version if project == canonicalize_name(name) else None


class UpstreamIndex:
    """Reads project pages of one index; pages are cached, so each is fetched once."""

    def __init__(
        self, url: str, *, timeout: float = TIMEOUT, session: requests.Session | None = None
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"{redact(url)} is not an http(s) URL of a simple index",
                key="--index-url",
                hint="e.g. https://pypi.org/simple/ or https://download.pytorch.org/whl/cu128/",
            )
        self.url = url.rstrip("/") + "/"
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "relforge-upstream")
        self._pages: dict[str, ProjectPage | None] = {}
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or redact(self.url)

    def get(
        self, url: str, *, headers: Mapping[str, str] | None = None, stream: bool = False
    ) -> requests.Response:
        """One GET; a network failure is an EnvironmentFault naming the host."""
        try:
            return self.session.get(url, timeout=self.timeout, headers=headers, stream=stream)
        except requests.RequestException as exc:
            raise EnvironmentFault(
                f"cannot reach the index host {self.host} ({type(exc).__name__} on {redact(url)})",
                key="--index-url",
                hint="check the URL and the network (DNS, proxy, firewall); nothing was written",
            ) from None

    def project(self, name: str) -> ProjectPage | None:
        """The project's page, or None when the index has no such project (404)."""
        key = str(canonicalize_name(name))
        with self._lock:
            if key in self._pages:
                return self._pages[key]
        page = self._read(key)
        with self._lock:
            self._pages[key] = page
        return page

    def prefetch(self, names: Iterable[str]) -> None:
        """Read several pages side by side (PyPI's pages of torch or nvidia-* are large)."""
        todo = sorted({str(canonicalize_name(n)) for n in names} - set(self._pages))
        with ThreadPoolExecutor(READERS) as pool:
            list(pool.map(self.project, todo))

    def _read(self, key: str) -> ProjectPage | None:
        url = urljoin(self.url, f"{key}/")
        response = self.get(url, headers={"Accept": ACCEPT})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise EnvironmentFault(
                f"the index host {self.host} answered HTTP {response.status_code} for "
                f"{redact(url)}",
                key="--index-url",
                hint="rerun later; nothing was written",
            )
        try:
            files = page_files(
                response.content, response.headers.get("Content-Type", ""), response.url or url
            )
        except ValueError as exc:
            raise EnvironmentFault(
                f"the index host {self.host} answered {redact(url)} with a page relforge cannot "
                f"read ({exc})",
                key="--index-url",
            ) from None
        grouped: dict[Version, list[PageFile]] = {}
        for item in files:
            version = file_version(key, item.filename)
            if version is not None:
                grouped.setdefault(version, []).append(item)
        versions = {
            v: UpstreamVersion(project=key, version=v, files=tuple(grouped[v]))
            for v in sorted(grouped)
        }
        return ProjectPage(name=key, url=url, versions=versions)
