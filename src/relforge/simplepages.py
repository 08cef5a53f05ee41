"""Simple-repository pages (PEP 503 HTML, PEP 691 JSON): the links of an HTML page with their
attributes, and a project page's files with what the index says of each (sha256, yanked, PEP 658
metadata, Requires-Python).

One parser for every reader of simple-index pages (our own pages in `verify`, an upstream index
in `deps mirror` and `upstream check`, a dependency index in `wheel inspect --index`, PyPI in
`pypi upload`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

JSON_V1 = "application/vnd.pypi.simple.v1+json"
# What a reader asks for: PEP 691 JSON first, PEP 503 HTML (either name) as the fallback.
ACCEPT = f"{JSON_V1}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def anchors(text: str) -> list[dict[str, str | None]]:
    """The attributes of every `<a>` tag, in page order."""
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    return parser.anchors


def hrefs(text: str) -> list[str]:
    """The non-empty `href` of every `<a>` tag, in page order."""
    return [href for a in anchors(text) if (href := a.get("href"))]


@dataclass(frozen=True, kw_only=True)
class PageFile:
    """One file a project page lists."""

    filename: str
    url: str  # absolute, without the hash fragment
    sha256: str | None  # the hash the page gives (None: none given)
    yanked: str | None  # None: not yanked; otherwise the reason ("" when none is given)
    metadata: bool  # the index serves `<url>.metadata` (PEP 658 / PEP 714)
    metadata_sha256: str | None  # that file's sha256, when the page gives it
    requires_python: str | None


def filename_of(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def page_files(body: bytes, content_type: str, page_url: str) -> list[PageFile]:
    """The files of a project page: PEP 691 JSON when the content type says so, else PEP 503
    HTML; relative links are resolved against `page_url`.  ValueError when JSON is malformed."""
    if "json" in content_type:
        return _json_files(body, page_url)
    return [
        _html_file(a, page_url) for a in anchors(body.decode("utf-8", "replace")) if a.get("href")
    ]


def _json_files(body: bytes, page_url: str) -> list[PageFile]:
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("files", []), list):
        raise ValueError("not a PEP 691 project page (no `files` list)")
    out = []
    for item in data.get("files", []):
        if not isinstance(item, dict):
            continue
        url = urljoin(page_url, str(item.get("url") or ""))
        hashes: dict[str, Any] = item["hashes"] if isinstance(item.get("hashes"), dict) else {}
        yanked = item.get("yanked", False)
        meta: Any = item.get("core-metadata", item.get("dist-info-metadata", False))
        python = item.get("requires-python")
        out.append(
            PageFile(
                filename=str(item.get("filename") or filename_of(url)),
                url=urlsplit(url)._replace(fragment="").geturl(),
                sha256=_str(hashes.get("sha256")),
                yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
                metadata=bool(meta),
                metadata_sha256=_str(meta.get("sha256")) if isinstance(meta, dict) else None,
                requires_python=_str(python),
            )
        )
    return out


def _html_file(anchor: dict[str, str | None], page_url: str) -> PageFile:
    url = urljoin(page_url, anchor.get("href") or "")
    parts = urlsplit(url)
    name, _, value = parts.fragment.partition("=")
    meta = anchor.get("data-core-metadata", anchor.get("data-dist-info-metadata"))
    meta_name, _, meta_value = (meta or "").partition("=")
    return PageFile(
        filename=filename_of(url),
        url=parts._replace(fragment="").geturl(),
        sha256=value if name == "sha256" and value else None,
        yanked=(anchor.get("data-yanked") or "") if "data-yanked" in anchor else None,
        metadata=meta is not None and meta != "false",
        metadata_sha256=meta_value if meta_name == "sha256" and meta_value else None,
        requires_python=anchor.get("data-requires-python"),
    )


def _str(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value else None
