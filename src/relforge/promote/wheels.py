"""Wheel rewrites for publishing: the local-version strip for PyPI (`2.9.0+cu128` → `2.9.0`:
METADATA Version, `.dist-info`/`.data` names, RECORD, file name), done by copying zip members
without recompressing them.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.errors import ConfigError, RefusedError
from relforge.manifest import sha256_file
from relforge.promote.zipcopy import rewrite_zip
from relforge.record import record_hash
from relforge.wheelformat import METADATA, RECORD, WheelName, dist_info_dir, record_rows


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


@dataclass(frozen=True, kw_only=True)
class Rewritten:
    path: Path
    source: Path
    sha256: str
    size: int
    changes: tuple[str, ...]
    written: bool  # False when an identical file was already there


def pypi_name(wheel: Path) -> str:
    """The file name the wheel gets on PyPI (its version without the local part)."""
    name = WheelName.parse(wheel.name)
    return WheelName(
        distribution=name.distribution, version=name.public_version, rest=name.rest
    ).filename


def strip_local(wheel: Path, out_dir: Path) -> Rewritten:
    """Write `wheel` without its local version (and without classifiers PyPI rejects) to
    `out_dir`.  An identical file already there is kept; a different one is refused."""
    name = WheelName.parse(wheel.name)
    public = name.public_version
    target = out_dir / pypi_name(wheel)
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
            info_dir = dist_info_dir(names, str(wheel))
            metadata = zf.read(f"{info_dir}/{METADATA}").decode("utf-8")
            record_name = f"{info_dir}/{RECORD}"
            record = zf.read(record_name).decode("utf-8")
    except (zipfile.BadZipFile, KeyError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{wheel}: not a readable wheel ({exc})") from None
    dist, _, info_version = info_dir.removesuffix(".dist-info").rpartition("-")
    if info_version != name.version:
        raise ConfigError(
            f"{wheel}: {info_dir} does not match the file name's version {name.version}"
        )
    if any(n.startswith(f"{info_dir}/RECORD.") for n in names):
        raise RefusedError(
            f"{wheel}: a signed wheel (RECORD.jws/RECORD.p7s) cannot be rewritten",
            hint="sign after staging for PyPI, not before",
        )
    suffixes = (".dist-info/", ".data/")

    def rename(member: str) -> str:
        for suffix in suffixes:
            old = f"{dist}-{info_version}{suffix}"
            if member.startswith(old):
                return f"{dist}-{public}{suffix}{member[len(old) :]}"
        return member

    new_metadata, changes = pypi_metadata(metadata, public)
    if rename(f"{info_dir}/") != f"{info_dir}/":
        changes.insert(0, f"{info_dir} → {rename(info_dir + '/').rstrip('/')}")
    if target.name != wheel.name:
        changes.insert(0, f"{wheel.name} → {target.name}")
    replace = {f"{info_dir}/METADATA": new_metadata.encode("utf-8")}
    replace[record_name] = _new_record(record, rename, replace, record_name).encode("utf-8")
    sha, size, written = write_rewritten(
        wheel, target, hint="remove it, or choose another --out", rename=rename, replace=replace
    )
    return Rewritten(
        path=target, source=wheel, sha256=sha, size=size, changes=tuple(changes), written=written
    )


def write_rewritten(
    wheel: Path, target: Path, *, hint: str, **rewrite: Any
) -> tuple[str, int, bool]:
    """Rewrite `wheel` (`rewrite_zip` with `rewrite`) into `target`: through a temporary file
    beside it, so no half-written wheel is ever visible; an existing target with the same bytes
    is kept, one with other bytes refused.  Returns (sha256, size, written)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha = rewrite_zip(wheel, tmp, **rewrite)
        size = tmp.stat().st_size
        written = not target.exists()
        if not written and sha256_file(target) != sha:
            raise RefusedError(
                f"{target} exists with different content; it was not overwritten", hint=hint
            )
        if written:
            tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return sha, size, written


def _new_record(
    record: str, rename: Callable[[str], str], replace: dict[str, bytes], record_name: str
) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in record_rows(record, record_name):
        if not row:
            continue
        path = row[0]
        if path == record_name:
            writer.writerow([rename(path), "", ""])
        elif path in replace:
            data = replace[path]
            writer.writerow([rename(path), record_hash(data), str(len(data))])
        else:
            writer.writerow([rename(path), *row[1:]])
    return out.getvalue()
