"""The reference pages of the docs site, generated from the code that is their source of truth.

Entry points: `reference_pages(cli)` returns every page (file name → text) of docs/reference/;
`write_reference(folder, cli)` writes them.  The click group is passed in: stages never import
the CLI (tests/unit/test_layers.py), so scripts/docs_reference.py hands it over.
"""

from __future__ import annotations

from relforge.reference.pages import reference_pages, write_reference

__all__ = ["reference_pages", "write_reference"]
