"""PyPI: stage the PyPI-default wheel of each platform (local version stripped) under
`pypi-staging/X.Y.Z/`, and upload the staged files with twine — skipping files the index already
has with the same sha256 and refusing, before anything is uploaded, when it has other bytes.
"""

from __future__ import annotations

import os
import tempfile
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from relforge.errors import (
    ConfigError,
    EnvironmentFault,
    NothingToDoError,
    RefusedError,
    RelforgeError,
    UsageError,
)
from relforge.manifest import sha256_file
from relforge.matrix.schema import Matrix
from relforge.promote.channel import STAGING, Placed, main_store, place, public_version
from relforge.promote.channel import trust as channel_trust
from relforge.promote.index import canonical, parse_dist
from relforge.promote.promote import check_digest, select_manifest
from relforge.promote.publish import refuse_unvalidated
from relforge.promote.store import ObjectStore
from relforge.promote.transfer import Batch, Transfer, plan_batch
from relforge.promote.wheels import pypi_name, strip_local
from relforge.simplepages import hrefs
from relforge.wheelversion import Rewritten


@dataclass(frozen=True, kw_only=True)
class StagePlan:
    store: ObjectStore
    version: str
    inputs: tuple[tuple[Placed, str], ...]  # (release-channel artifact, staged key)
    size_limit_mb: int
    where: str


def plan_stage(
    matrix: Matrix,
    version: str,
    manifest_path: Path | None = None,
    *,
    manifest_digest: str | None = None,
) -> StagePlan:
    """The copies of one version's PyPI-default wheels (chosen from the manifest in the release
    channel, or the one given) into the store's PyPI staging folder.  Writes nothing."""
    version = public_version(version)
    pin = check_digest(manifest_digest)
    store = main_store(matrix)
    manifest, where = select_manifest(
        store, matrix, "release", version, manifest_path, trust=channel_trust(matrix), pin=pin
    )
    placed = [
        p
        for p in place(matrix, manifest, "release", where)
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
    return StagePlan(
        store=store,
        version=version,
        inputs=inputs,
        size_limit_mb=matrix.project.size_limit_mb,
        where=where,
    )


def render_stage(plan: StagePlan, echo: Callable[[str], None]) -> None:
    echo(
        f"stage {len(plan.inputs)} wheel(s) of {plan.version} for PyPI in "
        f"{plan.store.url}/{STAGING}/{plan.version}/ (from {plan.where})"
    )
    for p, key in plan.inputs:
        state = "present (checked when applied)" if plan.store.head(key) else "to write"
        echo(f"  {p.entry.cell_id}: {p.key} → {key.rsplit('/', 1)[1]}  [{state}]")


def apply_stage(
    plan: StagePlan, workdir: Path, only: set[str] | None = None
) -> tuple[Batch, list[Rewritten]]:
    """Download, verify, rewrite each wheel (or those staged under the keys `only`) under
    `workdir`; returns the batch to apply (the caller refuses conflicts before applying it)."""
    rewritten, transfers = [], []
    for p, key in plan.inputs:
        if only is not None and key not in only:
            continue
        src = workdir / "in" / p.filename
        src.parent.mkdir(parents=True, exist_ok=True)
        got = plan.store.download(p.key, src)
        if got != p.entry.sha256:
            raise RefusedError(
                f"{plan.store.url}/{p.key}: sha256 {got}, the manifest says {p.entry.sha256}"
            )
        out = strip_local(src, workdir / "out")
        if out.size > plan.size_limit_mb * 1024 * 1024:
            raise RefusedError(
                f"{out.path.name} is {out.size / 2**20:.1f} MiB, over the limit of "
                f"{plan.size_limit_mb} MiB",
                hint="project.size_limit_mb (PyPI's default is 100 MB per file)",
            )
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


def _scrub(text: str, *urls: str) -> str:
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


def _remote_sha256(url: str) -> str:
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
        f"cannot read {public_url(url)}: {_scrub(str(exc), url)}",
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
        found = remote[1] or _remote_sha256(remote[0])
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


def upload(store: ObjectStore, items: list[UploadItem], repository_url: str, index_url: str) -> int:
    """Upload the files to upload with twine, then check the index lists each with its hash."""
    todo = [i for i in items if i.state == "upload"]
    if not todo:
        return 0
    from twine.commands.upload import upload as twine_upload
    from twine.exceptions import (
        NonInteractive,
        RedirectDetected,
        TwineException,
        UnreachableRepositoryURLDetected,
    )
    from twine.settings import Settings

    with tempfile.TemporaryDirectory(prefix="relforge-pypi-") as tmp:
        paths = []
        for item in todo:
            path = Path(tmp) / item.filename
            if store.download(item.key, path) != item.sha256:
                raise RefusedError(f"{store.url}/{item.key} changed while uploading")
            paths.append(str(path))
        settings = Settings(
            repository_url=repository_url,
            username=os.environ.get("TWINE_USERNAME"),
            password=os.environ.get("TWINE_PASSWORD"),
            non_interactive=True,
            disable_progress_bar=True,
        )
        where = public_url(repository_url)
        try:
            twine_upload(settings, paths)
        except NonInteractive as exc:
            raise ConfigError(
                f"no credentials to upload to {where}: {exc}",
                key="TWINE_USERNAME/TWINE_PASSWORD",
                hint="set TWINE_USERNAME and TWINE_PASSWORD (for PyPI: __token__ and an API "
                "token) in the environment",
            ) from None
        except (RedirectDetected, UnreachableRepositoryURLDetected) as exc:
            raise EnvironmentFault(
                f"upload to {where} failed: {_one_line(_scrub(str(exc), repository_url))}",
                key="--repository-url",
                hint="give the repository's upload URL itself (no redirect), then rerun",
            ) from None
        except TwineException as exc:
            raise RelforgeError(f"twine: {_scrub(str(exc), repository_url)}") from None
        except Exception as exc:  # requests' HTTPError and friends: say what, never credentials
            raise _upload_fault(exc, where, repository_url) from None
    after = {}
    for item in todo:
        parsed = parse_dist(item.filename)
        assert parsed is not None
        after.update(index_files(index_url, parsed[0]))
    for item in todo:
        listed = after.get(item.filename)
        if listed is None:
            raise EnvironmentFault(
                f"{item.filename} was uploaded but {public_url(index_url)} does not list it",
                key="--index-url",
                hint="the index's pages may lag behind its uploads (a cache): rerun later to "
                "check again (uploaded files are skipped)",
            )
        found = listed[1] or _remote_sha256(listed[0])
        if found != item.sha256:
            raise RelforgeError(
                f"{item.filename}: the index serves sha256 {found}, uploaded {item.sha256}"
            )
    return len(todo)


def _one_line(text: str) -> str:
    return " ".join(text.split())  # twine's messages span lines; ours are one paragraph


def _upload_fault(exc: Exception, where: str, repository_url: str) -> RelforgeError:
    """An upload that failed: the index refused it or could not be reached (exit 6); any
    other exception is a bug (exit 1)."""
    import requests

    status = getattr(getattr(exc, "response", None), "status_code", None) or 0
    reason = _one_line(_scrub(str(exc), repository_url))
    message = f"upload to {where} failed: {type(exc).__name__}: {reason}"
    if status in (401, 403):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="check TWINE_USERNAME and TWINE_PASSWORD (the index refused the credentials)",
        )
    if (
        status >= 500
        or status == 429
        or isinstance(exc, requests.ConnectionError | requests.Timeout)
    ):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the index cannot be reached or is failing; rerun later (uploaded files are "
            "skipped)",
        )
    if status:
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the index refused the upload for the reason it gives above (PyPI never takes "
            "a file name twice, even after a delete)",
        )
    if isinstance(exc, requests.RequestException):
        return EnvironmentFault(
            message,
            key="--repository-url",
            hint="the connection to the index failed; rerun (uploaded files are skipped)",
        )
    return RelforgeError(message)


def require_repository(url: str | None, matrix: Matrix) -> str:
    flag = "--repository-url" if url else "publishing.pypi_repository_url"
    url = url or matrix.publishing.pypi_repository_url
    if not url:
        raise ConfigError(
            "no repository to upload to",
            key="--repository-url",
            hint="pass --repository-url or set publishing.pypi_repository_url in the matrix",
        )
    return check_url(url, flag)


def file_sha256(path: Path) -> str:
    return sha256_file(path)
