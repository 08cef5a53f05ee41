"""PyPI's rule since July 2026: no file may be added to a release whose first file was uploaded
more than 14 days ago.  The pre-flight knows each file's upload time from the index (PEP 700's
`upload-time` on a PEP 691 page; the `Last-Modified` of the file on an index that serves HTML,
such as pypiserver) and refuses, before anything is uploaded, an upload that adds files to such
a release.  Files already there (the same name) add nothing: a rerun stays a no-op."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping

from packaging.version import Version

from relforge.promote.index.folder import parse_dist

ADD_FILES_DAYS = 14
ADD_FILES_LIMIT = datetime.timedelta(days=ADD_FILES_DAYS)
RULE = (
    f"PyPI refuses new files for a release first uploaded more than {ADD_FILES_DAYS} days ago "
    "(since July 2026)"
)


def first_uploads(
    files: Iterable[str], uploaded: Mapping[str, datetime.datetime | None]
) -> dict[Version, datetime.datetime | None]:
    """Each version of the `files` on the index → when its first file was uploaded (None: a
    file of it has no known upload time in `uploaded`, so its first upload is not known)."""
    out: dict[Version, datetime.datetime | None] = {}
    unknown: set[Version] = set()
    for name in files:
        parsed = parse_dist(name)
        if parsed is None:
            continue
        version, when = parsed[1], uploaded.get(name)
        if when is None:
            unknown.add(version)
            continue
        seen = out.get(version)
        out[version] = when if seen is None else min(seen, when)
    return {v: None if v in unknown else out.get(v) for v in {*out, *unknown}}


def age_problems(
    adds: Iterable[str],
    files: Iterable[str],
    uploaded: Mapping[str, datetime.datetime | None],
    now: datetime.datetime,
    where: str,
) -> tuple[list[str], list[str]]:
    """(problems, notes) of adding the files `adds` (names not among the index's `files`) to
    the releases on it: a problem per release first uploaded `ADD_FILES_LIMIT` or more before
    `now` (aware); a note per release on the index whose first upload is not known."""
    firsts = first_uploads(files, uploaded)
    wanted: dict[Version, list[str]] = {}
    for name in adds:
        parsed = parse_dist(name)
        if parsed is not None and parsed[1] in firsts:
            wanted.setdefault(parsed[1], []).append(name)
    problems, notes = [], []
    for version, names in sorted(wanted.items()):
        first = firsts[version]
        if first is None:
            notes.append(
                f"{where} does not say when {version} was first uploaded, so PyPI's "
                f"{ADD_FILES_DAYS}-day rule for adding files to it was not checked"
            )
            continue
        age = now - first
        if age >= ADD_FILES_LIMIT:
            utc = first.astimezone(datetime.timezone.utc)
            problems.append(
                f"{version} was first uploaded to {where} on {utc:%Y-%m-%d %H:%M} UTC, "
                f"{age.days} days ago: {RULE}, so its {len(names)} new file(s) "
                f"({', '.join(sorted(names))}) would be refused"
            )
    return problems, notes


def age_hint(problems: Iterable[str]) -> str | None:
    """What to do instead, when one of `problems` is the 14-day rule's."""
    if not any(RULE in p for p in problems):
        return None
    return (
        "files cannot be added to that release any more: release a new version with them "
        "(a post-release such as X.Y.Z.post1 when the code is the same)"
    )


def parse_upload_time(value: object) -> datetime.datetime | None:
    """PEP 700's `upload-time` (ISO 8601, e.g. 2026-07-01T12:00:00.123456Z) as an aware
    datetime; None when absent or not a time."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def parse_last_modified(value: str | None) -> datetime.datetime | None:
    """An HTTP `Last-Modified` date as an aware datetime; None when absent or malformed."""
    import email.utils

    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)
