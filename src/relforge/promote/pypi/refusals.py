"""What PyPI (and twine, before it sends anything) would refuse about a release, found before
the first file is uploaded — an upload cannot be undone, and PyPI refuses one file at a time,
after the earlier ones are public.

Per file: its size against the project's per-file limit (`publishing.pypi_file_limit_mb`);
the file name's project and version against METADATA's `Name` and `Version`; the file name's
tags against WHEEL's `Tag` lines; every `Classifier` against the `trove-classifiers` package
(deprecated ones too); METADATA as twine's `packaging` reads it (a `Metadata-Version` it does not
know, a field it cannot parse).  For the release: its size plus the project's current usage on
the index against the project quota (`publishing.pypi_project_limit_mb`), and the age of a
release it adds files to against PyPI's 14-day rule (relforge.promote.pypi.age).
"""

from __future__ import annotations

import datetime
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from relforge.errors import RefusedError
from relforge.wheelformat import METADATA, WHEEL, WheelError, parse_headers, read_info_file

MIB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class Limits:
    file_mb: int  # publishing.pypi_file_limit_mb
    project_mb: int  # publishing.pypi_project_limit_mb


@dataclass(frozen=True, kw_only=True)
class Usage:
    """What the project's files on the index add up to (`total` None: not known, see `note`)."""

    total: int | None
    files: frozenset[str]  # names already on the index (not counted again)
    note: str  # where the figure comes from, or why there is none
    # name → when the index says it was uploaded (None: it does not say); PyPI's 14-day rule
    uploaded: Mapping[str, datetime.datetime | None] = dc_field(default_factory=dict)


def file_problems(path: Path) -> list[str]:
    """What PyPI or twine would refuse about the wheel at `path` (named by its file name)."""
    name = path.name
    try:
        dist, version, _build, tags = parse_wheel_filename(name)
    except InvalidWheelFilename as exc:
        return [f"{name}: not a wheel file name ({exc})"]
    try:
        with zipfile.ZipFile(path) as zf:
            metadata = read_info_file(zf, name, METADATA)[1]
            wheel = read_info_file(zf, name, WHEEL)[1]
    except (WheelError, zipfile.BadZipFile, OSError) as exc:
        return [f"{name}: not a readable wheel ({exc})"]
    problems = _metadata_problems(name, metadata, dist, version)
    headers, undecodable = parse_headers(wheel, f"{name} WHEEL")
    problems += [f"{name}: {p}" for p in undecodable]
    try:
        listed = frozenset(t for line in headers.get_all("Tag") or () for t in parse_tag(line))
    except ValueError as exc:
        listed = frozenset()
        problems.append(f"{name}: WHEEL has a Tag line that is not a tag ({exc})")
    if listed != tags:
        problems.append(
            f"{name}: WHEEL lists the tags {_tags(listed)}, the file name {_tags(tags)}"
        )
    return problems


def _tags(tags: frozenset[object]) -> str:
    return ", ".join(sorted(map(str, tags))) or "none"


def _metadata_problems(name: str, data: bytes, dist: str, version: Version) -> list[str]:
    from packaging.metadata import ExceptionGroup, Metadata, parse_email

    headers, undecodable = parse_headers(data, f"{name} METADATA")
    problems = [f"{name}: {p}" for p in undecodable]
    meta_name = str(headers.get("Name", "")).strip()
    if canonicalize_name(meta_name) != canonicalize_name(dist):
        problems.append(f"{name}: METADATA names the project {meta_name!r}, the file name {dist!r}")
    meta_version = str(headers.get("Version", "")).strip()
    try:
        same = Version(meta_version) == version
    except InvalidVersion:
        same = False
    if not same:
        problems.append(f"{name}: METADATA has Version {meta_version!r}, the file name {version}")
    problems += [f"{name}: {p}" for p in classifier_problems(headers.get_all("Classifier") or ())]
    raw, unparsed = parse_email(data)
    for field in sorted(unparsed):
        problems.append(f"{name}: METADATA field {field!r} is unrecognized or malformed (twine)")
    try:
        Metadata.from_raw(raw)
    except ExceptionGroup as group:
        problems += sorted(f"{name}: METADATA: {exc} (twine)" for exc in group.exceptions)
    return problems


def classifier_problems(values: Sequence[object]) -> list[str]:
    from trove_classifiers import classifiers, deprecated_classifiers

    out = []
    for value in (str(v).strip() for v in values):
        if value in deprecated_classifiers:
            instead = ", ".join(deprecated_classifiers[value]) or "nothing"
            out.append(f"classifier {value!r} is deprecated (PyPI refuses it; use {instead})")
        elif value not in classifiers:
            out.append(f"classifier {value!r} is not a trove classifier (PyPI refuses it)")
    return out


def release_problems(
    files: Sequence[tuple[str, int]], limits: Limits, usage: Usage, where: str
) -> list[str]:
    """The sizes: each file (name, bytes) against the per-file limit, the files not yet on
    the index plus the project's usage against the quota."""
    problems = [
        f"{name}: {size / MIB:.1f} MiB, over the project's per-file limit of {limits.file_mb} "
        "MiB (publishing.pypi_file_limit_mb; PyPI raises a project's limit on request)"
        for name, size in files
        if size > limits.file_mb * MIB
    ]
    adds = sum(size for name, size in files if name not in usage.files)
    used = usage.total or 0
    if used + adds > limits.project_mb * MIB:
        problems.append(
            f"the release adds {adds / MIB:.1f} MiB to the {used / MIB:.1f} MiB the project "
            f"uses on {where} ({usage.note}): {(used + adds) / MIB:.1f} MiB, over the project's "
            f"quota of {limits.project_mb} MiB (publishing.pypi_project_limit_mb; yanking frees "
            "nothing, PyPI raises a quota on request)"
        )
    return problems


def refuse(problems: Sequence[str], what: str, *, also: str | None = None) -> None:
    """One refusal listing every problem (nothing was `what`); `also` adds to the hint."""
    if problems:
        raise RefusedError(
            f"{len(problems)} problem(s) PyPI or twine would refuse; nothing was {what}:\n  "
            + "\n  ".join(problems),
            hint="fix them all before the first upload: PyPI refuses one file at a time, after "
            "the earlier ones are public, and an upload cannot be undone"
            + (f"; {also}" if also else ""),
        )
