"""`relforge site`: the install selector, `published_versions.json` and the compatibility page,
rendered from the matrix as a static site with no external assets.

Public entry points: `build_site` (given a `SiteRequest`: render + write atomically) and
`publish_site` (upload the rendered files to the store's `site/` folder; a dry run unless told
to execute).  The commands come from `relforge.matrix.docs.install_command`, the function
`matrix docs` prints with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from relforge.errors import UsageError
from relforge.matrix.docs import with_download_url
from relforge.matrix.schema import Matrix
from relforge.matrix.values import base_url_problem
from relforge.site.sitefiles import render_site
from relforge.site.siteupload import SITE_PREFIX, SiteUpload, apply_site_upload, plan_site_upload
from relforge.site.write import write_site
from relforge.stores.objectstore import ObjectStore

__all__ = ["SiteRequest", "SiteResult", "build_site", "publish_site"]


@dataclass(frozen=True, kw_only=True)
class SiteResult:
    out: Path
    files: Mapping[str, str]
    releases: tuple[str, ...]
    download_url: str


def _checked_download_url(matrix: Matrix, given: str | None) -> str:
    url = matrix.project.download_url if given is None else given
    key = "--download-url" if given is not None else "project.download_url"
    if not url:
        raise UsageError(
            "the site needs the URL the channel folders hang off, and the matrix sets none",
            where=matrix.project.span,
            key=key,
            hint="set project.download_url in the matrix, or pass --download-url URL",
        )
    problem = base_url_problem(url)
    if problem:
        raise UsageError(
            f"{url!r} {problem}",
            where=None if given is not None else matrix.project.at("download_url"),
            key=key,
        )
    return url


@dataclass(frozen=True, kw_only=True)
class SiteRequest:
    """What `relforge site` asks for: the site of `releases` of `matrix` (default: every
    release) in `out`, its links under `download_url` (default: the matrix's)."""

    matrix: Matrix
    out: Path
    releases: Sequence[str] = ()
    download_url: str | None = None


def build_site(request: SiteRequest) -> SiteResult:
    """Render the site of `releases` (default: every release) into `out`, replacing it whole."""
    matrix, out, releases = request.matrix, request.out, request.releases
    url = _checked_download_url(matrix, request.download_url)
    matrix = with_download_url(matrix, url)
    chosen = [matrix.release(r) for r in dict.fromkeys(releases)] or list(matrix.releases.values())
    order = list(matrix.releases)
    chosen.sort(key=lambda r: order.index(r.name))
    files = render_site(matrix, chosen)
    write_site(files, out)
    return SiteResult(
        out=out,
        files=files,
        releases=tuple(r.name for r in chosen),
        download_url=url,
    )


def publish_site(
    store: ObjectStore, result: SiteResult, *, execute: bool
) -> tuple[list[SiteUpload], int, str]:
    """The upload plan of a built site to `store` (the matrix's `publishing.store`), applied
    when `execute`; returns the plan, the number of files written and where they go."""
    plan = plan_site_upload(store, result.files)
    written = apply_site_upload(store, result.files, plan) if execute else 0
    return plan, written, f"{store.url.rstrip('/')}/{SITE_PREFIX}/"
