"""The text edits that write upstream's changes into a matrix file in place: a pin's version (and
the `cudnn:`/`nccl:` key that follows it), a new axis value after the newest one, the Python list
with versions added and dropped.  Everything else in the file — comments, quoting, order, blank
lines — stays as it was (relforge.release.yaml_edit, driven by the loader's spans)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from relforge.errors import ConfigError
from relforge.matrix.source import Entry, Map, Node, Scalar, Seq
from relforge.release.yaml_edit import Edit, scalar_edit
from relforge.upstream.model import AddAxisValue, SetPin, SetPythons
from relforge.upstream.sites import child


def pin_edits(change: SetPin) -> list[Edit]:
    edits = [scalar_edit(change.node, change.new)]
    edits += [scalar_edit(f.node, f.new) for f in change.follows]
    return edits


def last_line(node: Node, lines: Sequence[str]) -> int:
    """The last line of the node's own text (a block collection: its last item's)."""
    if isinstance(node, Map) and not node.flow and node.entries:
        return last_line(list(node.entries.values())[-1].value, lines)
    if isinstance(node, Seq) and not node.flow and node.items:
        return last_line(node.items[-1], lines)
    end = node.end
    if end.column > 1 or end.line <= node.span.line:
        return end.line
    # a block scalar (`>-`) ends where the next token starts, after any blank lines
    line = end.line - 1
    while line > node.span.line and not lines[line - 1].strip():
        line -= 1
    return line


def _after_line(lines: Sequence[str], line: int, text: str) -> Edit:
    """Insert whole lines after line `line` (1-based): appended to that line's end, so the
    lines below, comments included, are not touched."""
    row = lines[line - 1].rstrip("\r\n")
    return Edit(line, len(row) + 1, "", "\n" + text.rstrip("\n"))


def _quote_like(sample: str, text: str) -> str:
    """`text` quoted the way `sample` (a key or item as written) is."""
    if sample.startswith("'"):
        return "'" + text.replace("'", "''") + "'"
    if sample.startswith('"'):
        return json.dumps(text)
    return text


def axis_edits(
    lines: Sequence[str], own: Map | None, axis: str, values: Sequence[AddAxisValue]
) -> list[Edit]:
    """New values written after the newest one of the axis, in the shape of that one."""
    node = child(own, "axes", axis)
    if not isinstance(node, Map) or not node.entries:
        raise ConfigError(f"axis {axis} is not written in this release", key=f"axes.{axis}")
    last: Entry = list(node.entries.values())[-1]
    key_col = last.key_span.column - 1
    written = lines[last.key_span.line - 1][key_col:]
    sample = written[:1] if written[:1] in "\"'" else ""
    template = last.value
    out = []
    for value in values:
        rendered = [("install", json.dumps(list(value.install)))]
        if value.index:
            rendered.append(("index", json.dumps(value.index)))
        if value.requires:
            rendered.append(("requires", json.dumps(list(value.requires))))
        key = _quote_like(sample, value.key)
        if isinstance(template, Map) and template.flow:
            body = ", ".join(f"{name}: {text}" for name, text in rendered)
            out.append(" " * key_col + f"{key}: {{{body}}}")
            continue
        first = next(iter(template.entries.values()), None) if isinstance(template, Map) else None
        indent = first.key_span.column - 1 if first else key_col + 2
        out.append(" " * key_col + f"{key}:")
        out += [" " * indent + f"{name}: {text}" for name, text in rendered]
    return [_after_line(lines, last_line(template, lines), "\n".join(out))]


def python_edits(
    lines: Sequence[str], own: Map, current: Sequence[str], change: SetPythons
) -> list[Edit]:
    """The release's Python list with `change.drop` removed and `change.add` appended."""
    wanted = [p for p in current if p not in change.drop] + list(change.add)
    node = own.get("python")
    if node is None:  # inherited: the release gets its own list, before its first key
        first = next(iter(own.entries.values()))
        col = first.key_span.column
        text = "python: " + json.dumps(wanted) + "\n" + " " * (col - 1)
        return [Edit(first.key_span.line, col, "", text)]
    if not isinstance(node, Seq):
        raise ConfigError("`python:` is not a list", where=node.span, key="python")
    items = [i for i in node.items if isinstance(i, Scalar)]
    sample = _source_text(lines, items[0]) if items else '"'
    if node.flow:
        if node.span.line != node.end.line:
            raise ConfigError(
                "cannot edit a `python:` list written over several lines in place",
                where=node.span,
                hint="write it on one line, or as a block list",
            )
        row = lines[node.span.line - 1]
        old = row[node.span.column - 1 : node.end.column - 1]
        new = "[" + ", ".join(_quote_like(sample, p) for p in wanted) + "]"
        return [Edit(node.span.line, node.span.column, old, new)]
    edits = []
    kept = [i for i in items if str(i.text) not in change.drop]
    head = lines[items[0].span.line - 1][: items[0].span.column - 1] if items else "- "
    dash = " " * (len(head.rstrip()) - 1) + head.rstrip()[-1:] + " "  # "    - "
    added = "\n".join(dash + _quote_like(sample, p) for p in change.add)
    for item in items:
        if item in kept:
            continue
        row = lines[item.span.line - 1]
        replace = added + "\n" if not kept and item is items[-1] and added else ""
        edits.append(Edit(item.span.line, 1, row, replace))
    if kept and added:
        edits.append(_after_line(lines, last_line(kept[-1], lines), added))
    return edits


def _source_text(lines: Sequence[str], node: Scalar) -> str:
    return lines[node.span.line - 1][node.span.column - 1 :]
