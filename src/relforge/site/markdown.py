"""The little Markdown relforge itself writes (`matrix diff`: headings, bullets, pipe tables,
inline code) as HTML.  Everything is escaped first; no other Markdown is recognised."""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"`([^`]*)`")


def _inline(text: str) -> str:
    parts = _CODE.split(text)
    return "".join(
        f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts)
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_to_html(text: str, *, top_level: int = 2) -> str:
    """HTML for `text`; `#` headings become `<h{top_level}>` and deeper ones follow."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("#"):
            depth = len(line) - len(line.lstrip("#"))
            level = min(6, top_level + depth - 1)
            out.append(f"<h{level}>{_inline(line[depth:].strip())}</h{level}>")
            i += 1
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            head, body = rows[0], rows[2:]
            thead = "".join(f'<th scope="col">{_inline(c)}</th>' for c in head)
            tbody = "".join(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body
            )
            out.append(
                f'<div class="scroll"><table><thead><tr>{thead}</tr></thead>'
                f"<tbody>{tbody}</tbody></table></div>"
            )
        else:
            para = []
            while i < len(lines) and lines[i].strip() and lines[i][0] not in "#-|":
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
    return "\n".join(out)
