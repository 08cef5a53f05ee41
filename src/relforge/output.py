"""Printing for the CLI and the stages: rich tables for people and versioned JSON for machines
(what GitHub Actions is told is relforge.actions)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def console(stderr: bool = False) -> Console:
    """A console that does not wrap tables when output goes to a pipe or a CI log."""
    from rich.console import Console  # imported when a table is printed: ~50 ms

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else max(shutil.get_terminal_size((200, 24)).columns, 200)
    return Console(file=stream, width=width, soft_wrap=False, highlight=False)


SCHEMA_VERSION_KEY = "schema_version"


def versioned(document: Mapping[str, Any], schema_version: int = 1) -> dict[str, Any]:
    """`document` with `"schema_version"` as its first key: every JSON document relforge prints
    for machines says which shape it has; a document that already names its version keeps it.
    Raise the version when a key changes meaning or goes away (adding keys keeps it)."""
    if SCHEMA_VERSION_KEY in document:
        return dict(document)
    return {SCHEMA_VERSION_KEY: schema_version, **document}


def print_json(document: Mapping[str, Any]) -> None:
    """One JSON document of relforge's own on stdout, versioned (see `versioned`: a document
    that names its own version keeps it)."""
    print_foreign_json(versioned(document))


def print_foreign_json(data: Any) -> None:
    """JSON in a shape another program defines (a GitHub job matrix, an S3 bucket policy):
    printed as it is, with no key of relforge's added."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


IN_PLACE = " — everything was already in place"


def in_place(line: str, nothing_done: bool) -> str:
    """A run's summary line, saying so when it had nothing to do (a rerun of a finished run)."""
    return line + IN_PLACE if nothing_done else line


def summary_with_list(summary: str, items: Sequence[str]) -> str:
    """A step summary's body: the summary line, then its Markdown list (when it has items)."""
    return "\n\n".join([summary, "\n".join(items)] if items else [summary])


def markdown_cell(text: str) -> str:
    """Text fit for a Markdown table cell: one line, `|` escaped, `<`/`>` outside code spans
    escaped (Markdown would take `<prefix>` for an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as plain lines in aligned columns (two spaces apart); the last column is neither
    padded nor cut, so a long message stays whole on its line for people and for grep."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
