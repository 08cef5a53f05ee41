"""The site's files as text: index.html (the selector), compatibility.html and
published_versions.json.  Templates are package data (`templates/site/`), autoescaped; the data
the selector reads is embedded in the page so it works from `file://` with no request at all."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

import jinja2
from markupsafe import Markup

from relforge import __version__
from relforge.matrix.schema import Matrix, Release
from relforge.site.compatpage import compatibility_page
from relforge.site.markdown import markdown_to_html
from relforge.site.publishedversions import published_versions

PACKAGE_TEMPLATES = "templates/site"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("relforge", PACKAGE_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def script_json(data: Any) -> Markup:
    """JSON safe inside a `<script>` element: no `<`, `>` or `&` can end it early."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return Markup(text)


def render_site(matrix: Matrix, releases: Sequence[Release]) -> dict[str, str]:
    """File name → content.  `releases` in file order (the page lists the newest first)."""
    versions = published_versions(matrix, releases)
    compat = compatibility_page(matrix, releases)
    env = _environment()
    common = {
        "project": matrix.project,
        "generator": f"relforge {__version__}",
        "matrix_file": PurePath(matrix.file).name,  # never a local path on a public page
    }
    index = env.get_template("index.html.j2").render(
        page="index", versions_json=script_json(versions), **common
    )
    compatibility = env.get_template("compatibility.html.j2").render(
        page="compatibility",
        page_data=compat,
        diff_html=Markup(markdown_to_html(compat.diff_markdown, top_level=3)),
        **common,
    )
    return {
        "index.html": index,
        "compatibility.html": compatibility,
        "published_versions.json": json.dumps(versions, indent=2, ensure_ascii=False) + "\n",
    }
