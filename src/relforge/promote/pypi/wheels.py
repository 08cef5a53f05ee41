"""Wheel rewrites for publishing: the local-version strip for PyPI (`2.9.0+cu128` → `2.9.0`:
METADATA Version, `.dist-info`/`.data` names, RECORD, file name; relforge.wheelversion), with
the classifiers PyPI rejects removed.
"""

from __future__ import annotations

from pathlib import Path

from relforge.wheelformat import WheelName
from relforge.wheelversion import Rewritten, renamed, with_version


def _headers(text: str) -> tuple[list[str], str]:
    """METADATA split into logical header lines (continuations kept with theirs) and body."""
    head, sep, body = text.partition("\n\n")
    lines: list[str] = []
    for line in head.split("\n"):
        if line[:1] in (" ", "\t") and lines:
            lines[-1] += "\n" + line
        else:
            lines.append(line)
    return lines, sep + body


def _accepted_classifier(value: str) -> bool:
    from trove_classifiers import classifiers, deprecated_classifiers

    return value in classifiers and value not in deprecated_classifiers


def pypi_metadata(text: str, version: str) -> tuple[str, list[str]]:
    """METADATA with `Version` set and the classifiers PyPI rejects removed; and what changed."""
    lines, body = _headers(text)
    out, changes = [], []
    for line in lines:
        name, _, value = line.partition(":")
        value = value.strip()
        if name.lower() == "version" and value != version:
            changes.append(f"Version: {value} → {version}")
            line = f"Version: {version}"
        elif name.lower() == "classifier" and not _accepted_classifier(value):
            changes.append(f"removed classifier {value!r} (PyPI rejects it)")
            continue
        out.append(line)
    return "\n".join(out) + body, changes


def pypi_name(wheel: Path) -> str:
    """The file name the wheel gets on PyPI (its version without the local part)."""
    return renamed(wheel.name, WheelName.parse(wheel.name).public_version)


def strip_local(wheel: Path, out_dir: Path) -> Rewritten:
    """Write `wheel` without its local version (and without classifiers PyPI rejects) to
    `out_dir`.  An identical file already there is kept; a different one is refused."""
    public = WheelName.parse(wheel.name).public_version
    return with_version(
        wheel,
        out_dir / pypi_name(wheel),
        public,
        hint="remove it, or choose another --out",
        metadata=lambda text: pypi_metadata(text, public),
    )
