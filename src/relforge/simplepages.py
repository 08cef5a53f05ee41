"""The links of a PEP 503 HTML page: its `<a>` tags with their attributes.

One parser for every reader of simple-index pages (our own pages in `verify`, an upstream index
in `deps mirror`, a dependency index in `wheel inspect --index`, PyPI in `pypi upload`).
"""

from __future__ import annotations

from html.parser import HTMLParser


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
