"""Every page of docs/reference/, and writing them: the one list `make docs` and the test that
the committed pages are current both read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from relforge.reference.checkpages import checks_page, lint_page
from relforge.reference.commands import commands_page
from relforge.reference.exitcodes import exit_codes_page
from relforge.reference.matrixkeys import matrix_keys_page
from relforge.reference.matrixschema import matrix_json_schema


def _schema_text() -> str:
    return json.dumps(matrix_json_schema(), indent=2, ensure_ascii=False) + "\n"


def reference_pages(cli: click.Group) -> dict[str, str]:
    """File name (in docs/reference/) → its generated text."""
    makers: dict[str, Callable[[], str]] = {
        "matrix.md": matrix_keys_page,
        "matrix.schema.json": _schema_text,
        "checks.md": checks_page,
        "lint.md": lint_page,
        "commands.md": lambda: commands_page(cli),
        "exit-codes.md": exit_codes_page,
    }
    return {name: make() for name, make in makers.items()}


def write_reference(folder: Path, cli: click.Group) -> list[Path]:
    """Write the pages into `folder`; return those whose text changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in reference_pages(cli).items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
