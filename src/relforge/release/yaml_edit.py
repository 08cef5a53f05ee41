"""Small in-place edits of YAML text at located values, so comments and layout survive."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from relforge.errors import ConfigError, Span
from relforge.matrix.source import Scalar


@dataclass(frozen=True)
class Edit:
    """Replace `old` (empty: insert) at 1-based line and column with `new`."""

    line: int
    column: int
    old: str
    new: str


def scalar_edit(node: Scalar, new: str) -> Edit:
    """Replace the text of a one-line scalar, keeping its quotes."""
    return Edit(node.span.line, node.span.column + (1 if node.quoted else 0), node.text, new)


def apply_edits(text: str, edits: Iterable[Edit], file: str) -> str:
    """Apply edits from the end of the text backwards; each must find its old text in place."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        if edit.line > len(lines):
            lines.append("")
        row = lines[edit.line - 1]
        start = edit.column - 1
        if row[start : start + len(edit.old)] != edit.old:
            raise ConfigError(
                f"cannot edit {edit.old!r} in place (it spans lines or uses escapes)",
                where=Span(file, edit.line, edit.column),
                hint="write the value on one line without escapes",
            )
        rest = row[start + len(edit.old) :]
        gap = len(rest) - len(rest.lstrip(" "))
        if gap and rest[gap:].startswith("#"):  # keep a trailing comment in its column
            rest = " " * max(1, gap + len(edit.old) - len(edit.new)) + rest[gap:]
        lines[edit.line - 1] = row[:start] + edit.new + rest
    return "".join(lines)
