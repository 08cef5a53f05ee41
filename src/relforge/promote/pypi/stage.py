"""PyPI: stage the PyPI-default wheel of each platform (local version stripped) under
`pypi-staging/X.Y.Z/`, and upload the staged files with twine — skipping files the index already
has with the same sha256 and refusing, before anything is uploaded, when it has other bytes.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.errors import (
    EnvironmentFault,
    NothingToDoError,
    RefusedError,
    UsageError,
)
from relforge.matrix.schema import Matrix
from relforge.promote.channel import STAGING, Placed, place, public_version
from relforge.promote.index.folder import canonical, parse_dist
from relforge.promote.plans.promote import check_digest, select_manifest
from relforge.promote.plans.publish import refuse_unvalidated
from relforge.promote.publishing import open_publishing
from relforge.promote.pypi.refusals import Limits
from relforge.promote.pypi.wheels import pypi_name, strip_local
from relforge.simplepages import hrefs
from relforge.stores.objectstore import ObjectStore
from relforge.stores.transfer import Batch, Transfer, plan_batch
from relforge.wheelversion import Rewritten


@dataclass(frozen=True, kw_only=True)
class StagePlan:
    store: ObjectStore
    version: str
    inputs: tuple[tuple[Placed, str], ...]  # (release-channel artifact, staged key)
    limits: Limits  # publishing.pypi_file_limit_mb, pypi_project_limit_mb
    index_url: str | None  # the simple index of publishing.pypi_repository_url, when set
    where: str
    present: frozenset[str] = frozenset()  # staged keys the store holds already

    def lines(self) -> list[str]:
        """The wheels to stage, each with its source and whether its staged file is there."""
        out = [
            f"stage {len(self.inputs)} wheel(s) of {self.version} for PyPI in "
            f"{self.store.url}/{STAGING}/{self.version}/ (from {self.where})"
        ]
        for p, key in self.inputs:
            state = "present (checked when applied)" if key in self.present else "to write"
            out.append(f"  {p.entry.cell_id}: {p.key} → {key.rsplit('/', 1)[1]}  [{state}]")
        return out

    def to_json(self) -> dict[str, Any]:
        """The plan's keys of the stage outcome's JSON (relforge.promote.pypi.steps)."""
        return {
            "version": self.version,
            "store": self.store.url,
            "staging": f"{STAGING}/{self.version}/",
            "manifest": self.where,
            "files": [
                {
                    "cell": p.entry.cell_id,
                    "source": p.key,
                    "staged": key,
                    "present": key in self.present,
                }
                for p, key in self.inputs
            ],
        }


@dataclass(frozen=True, kw_only=True)
class StageRequest:
    """What `relforge pypi stage` asks for: `version` of `matrix` staged for PyPI from the
    manifest at `manifest_path` (default: the manifests stored in the release channel),
    pinned to `manifest_digest` when given."""

    matrix: Matrix
    version: str
    manifest_path: Path | None = None
    manifest_digest: str | None = None


def plan_stage(request: StageRequest) -> StagePlan:
    """The copies of one version's PyPI-default wheels (chosen from the manifest in the release
    channel, or the one given) into the store's PyPI staging folder.  Writes nothing."""
    matrix, manifest_path = request.matrix, request.manifest_path
    version = public_version(request.version)
    pin = check_digest(request.manifest_digest)
    release = open_publishing(matrix).channel("release")
    store = release.store
    manifest, where = select_manifest(
        store, matrix, "release", version, manifest_path, trust=release.trust, pin=pin
    )
    placed = [
        p
        for p in place(release.cells, manifest, where)
        if p.cell.pypi_default
        and p.cell.package_type == "wheel"
        and public_version(p.entry.version) == version
    ]
    if not placed:
        raise NothingToDoError(
            f"{where}: no PyPI-default wheel of version {version}",
            key="--version",
            hint="pypi_default in the matrix names the variant of each platform that goes to PyPI",
        )
    refuse_unvalidated(placed, where)
    by_name: dict[str, list[Placed]] = {}
    for p in placed:
        by_name.setdefault(pypi_name(Path(p.filename)), []).append(p)
    clashes = {n: ps for n, ps in by_name.items() if len(ps) > 1}
    if clashes:
        lines = [
            f"{n} ← " + ", ".join(p.entry.cell_id for p in ps) for n, ps in sorted(clashes.items())
        ]
        raise RefusedError(
            f"{len(clashes)} PyPI file name(s) would come from two wheels; one would overwrite "
            "the other:\n  " + "\n  ".join(lines),
            hint="give each platform one pypi_default variant with its own platform tag",
        )
    inputs = tuple((p, f"{STAGING}/{version}/{pypi_name(Path(p.filename))}") for p in placed)
    repository = matrix.publishing.pypi_repository_url
    return StagePlan(
        store=store,
        version=version,
        inputs=inputs,
        limits=pypi_limits(matrix),
        index_url=default_index_url(repository) if repository else None,
        where=where,
        present=frozenset(key for _, key in inputs if store.head(key)),
    )


def pypi_limits(matrix: Matrix) -> Limits:
    pub = matrix.publishing
    return Limits(file_mb=pub.pypi_file_limit_mb, project_mb=pub.pypi_project_limit_mb)


def apply_stage(plan: StagePlan, workdir: Path) -> tuple[Batch, list[Rewritten]]:
    """Download, verify, rewrite each wheel under `workdir`; returns the batch to apply (the
    caller checks the files against PyPI's limits and refuses conflicts before applying it)."""
    rewritten, transfers = [], []
    for p, key in plan.inputs:
        src = workdir / "in" / p.filename
        src.parent.mkdir(parents=True, exist_ok=True)
        got = plan.store.download(p.key, src)
        if got != p.entry.sha256:
            raise RefusedError(
                f"{plan.store.url}/{p.key}: sha256 {got}, the manifest says {p.entry.sha256}"
            )
        out = strip_local(src, workdir / "out")
        rewritten.append(out)
        transfers.append(
            Transfer(key=key, sha256=out.sha256, size=out.size, what=p.entry.cell_id, path=out.path)
        )
    return plan_batch(plan.store, transfers, label="PyPI staging"), rewritten


# ---- upload -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UploadItem:
    key: str
    filename: str
    sha256: str
    state: str  # "upload" | "identical" | "conflict"
    found: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "key": self.key,
            "sha256": self.sha256,
            "state": self.state,
            "found": self.found,
        }


def check_url(url: str, flag: str) -> str:
    """An http(s) URL with a host, or a usage error naming `flag` (never echoing a password)."""
    try:
        parts = urllib.parse.urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in url
        valid = valid and (parts.port is None or parts.port > 0)  # a bad port raises ValueError
    except ValueError:
        valid = False
    if not valid:
        raise UsageError(
            f"{public_url(url)!r} is not an http(s) URL",
            key=flag,
            hint="e.g. https://upload.pypi.org/legacy/ (credentials go in TWINE_USERNAME and "
            "TWINE_PASSWORD, not in the URL)",
        )
    return url


def public_url(url: str) -> str:
    """`url` without the user and password it may carry (for messages)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url.rpartition("@")[2] if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def scrub(text: str, *urls: str) -> str:
    """`text` with the credentials of `urls` removed."""
    for url in urls:
        if url != public_url(url):
            text = text.replace(url, public_url(url))
            secret = urllib.parse.urlsplit(url).netloc.rpartition("@")[0]
            text = text.replace(secret, "***")
    return text


def default_index_url(repository_url: str) -> str:
    """The simple index that shows what `repository_url` received."""
    parts = urllib.parse.urlsplit(repository_url)
    if parts.netloc == "upload.pypi.org":
        return "https://pypi.org/simple/"
    if parts.netloc.endswith("pypi.org") and parts.path.rstrip("/").endswith("legacy"):
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/simple/", "", ""))
    return repository_url.rstrip("/") + "/simple/"


def index_files(index_url: str, project: str) -> dict[str, tuple[str, str | None]]:
    """filename → (absolute URL, sha256 from the link or None) on a PEP 503 index."""
    import requests

    url = urllib.parse.urljoin(index_url.rstrip("/") + "/", f"{canonical(project)}/")
    try:
        response = requests.get(url, headers={"Accept": "text/html"}, timeout=60)
    except requests.RequestException as exc:
        raise _unreachable(url, exc) from None
    if response.status_code == 404:
        return {}
    if not response.ok:
        raise _http_fault(url, response.status_code)
    links = {
        urllib.parse.unquote(href.split("#")[0].rsplit("/", 1)[-1]): href
        for href in hrefs(response.text)
    }
    out = {}
    for name, href in links.items():
        absolute = urllib.parse.urljoin(response.url, href)
        fragment = urllib.parse.urlsplit(absolute).fragment
        sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        out[name] = (absolute.split("#")[0], sha)
    return out


def remote_sha256(url: str) -> str:
    import hashlib

    import requests

    digest = hashlib.sha256()
    try:
        with requests.get(url, stream=True, timeout=600) as response:
            if not response.ok:
                raise _http_fault(url, response.status_code)
            for block in response.iter_content(1 << 20):
                digest.update(block)
    except requests.RequestException as exc:
        raise _unreachable(url, exc) from None
    return digest.hexdigest()


def _unreachable(url: str, exc: Exception) -> EnvironmentFault:
    return EnvironmentFault(
        f"cannot read {public_url(url)}: {scrub(str(exc), url)}",
        key="--index-url",
        hint="check the index URL and the network (DNS, proxy, firewall), then rerun",
    )


def _http_fault(url: str, status: int) -> EnvironmentFault:
    """A package index answering an error: the environment's fault (refused credentials, a
    failing service, or a URL that is not the index's)."""
    message = f"{public_url(url)}: HTTP {status}"
    if status in (401, 403):
        return EnvironmentFault(
            message + " (the index refused the request)",
            key="--index-url",
            hint="check the credentials and permissions the index expects",
        )
    if status >= 500 or status == 429:
        return EnvironmentFault(
            message + " (the index is failing or throttling)",
            key="--index-url",
            hint="rerun later; files already uploaded are skipped",
        )
    return EnvironmentFault(
        message + " (the index does not serve it)",
        key="--index-url",
        hint="check that --index-url is the index's simple (PEP 503) URL and that it serves "
        "the files its pages link to, then rerun",
    )


def plan_upload(store: ObjectStore, version: str, index_url: str) -> list[UploadItem]:
    """Each staged file of `version` against what `index_url` already lists: to upload,
    identical (skipped) or a conflict (other bytes under the same name).  Uploads nothing."""
    version = public_version(version)
    staged = [i for i in store.list(f"{STAGING}/{version}/") if parse_dist(i.key.rsplit("/", 1)[1])]
    if not staged:
        raise NothingToDoError(
            f"nothing is staged in {store.url}/{STAGING}/{version}/",
            key="--version",
            hint="relforge pypi stage FILE --version X.Y.Z --execute",
        )
    cache: dict[str, dict[str, tuple[str, str | None]]] = {}
    items = []
    for info in staged:
        filename = info.key.rsplit("/", 1)[1]
        sha = store.sha256(info.key)
        assert sha is not None
        parsed = parse_dist(filename)
        assert parsed is not None
        if parsed[0] not in cache:
            cache[parsed[0]] = index_files(index_url, parsed[0])
        remote = cache[parsed[0]].get(filename)
        if remote is None:
            items.append(UploadItem(key=info.key, filename=filename, sha256=sha, state="upload"))
            continue
        found = remote[1] or remote_sha256(remote[0])
        state = "identical" if found == sha else "conflict"
        items.append(
            UploadItem(key=info.key, filename=filename, sha256=sha, state=state, found=found)
        )
    return items


def refuse_upload_conflicts(items: list[UploadItem], index_url: str) -> None:
    bad = [
        f"{i.filename}: the index has sha256 {i.found}, staged {i.sha256}"
        for i in items
        if i.state == "conflict"
    ]
    if bad:
        raise RefusedError(
            f"{len(bad)} file(s) are on {public_url(index_url)} with different bytes; nothing "
            "was uploaded "
            "(an index never takes a file name twice):\n  " + "\n  ".join(bad),
            hint="stage a new version (a post release) instead",
        )


PYPI_UPLOAD_URL = "https://upload.pypi.org/legacy/"


def require_repository(url: str | None, matrix: Matrix) -> str:
    """The upload endpoint: --repository-url (or TWINE_REPOSITORY_URL, which the CLI reads
    into it), else publishing.pypi_repository_url, else PyPI's — as twine decides."""
    flag = "--repository-url" if url else "publishing.pypi_repository_url"
    url = url or matrix.publishing.pypi_repository_url or PYPI_UPLOAD_URL
    return check_url(url, flag)
