"""The reference pages of the docs site, generated from the code that is their source of truth.

Entry points: `reference_pages(cli)` returns every page (file name → text) of docs/reference/;
`write_reference(folder, cli)` writes them; `check_link(ID)` is where a check's or lint rule's
entry is (`docs/reference/checks.md#rf-v043`), and `explained(ID)` the hint that says so.  The
click group is passed in: stages never import the CLI (tests/unit/test_layers.py), so
scripts/docs_reference.py hands it over.  The page makers are imported on first use: an error
hint needs only the links.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from relforge.reference.links import check_link, explained

if TYPE_CHECKING:
    from relforge.reference.catalog import reference_pages, write_reference

_HOMES = {
    "reference_pages": "relforge.reference.catalog",
    "write_reference": "relforge.reference.catalog",
}

__all__ = ["check_link", "explained", "reference_pages", "write_reference"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
