"""The CPython support policy on a date: drop what is past end of life (RF-L001's rule), add the
newest CPython once it is released and every axis dependency ships wheels for it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from relforge.matrix.lint import python_release_dates, pythons_past_eol
from relforge.matrix.schema import Release
from relforge.upstream.index import UpstreamVersion
from relforge.upstream.model import SetPythons, UpstreamFinding, UpstreamSource


def check_pythons(
    release: Release,
    on: datetime.date,
    today: datetime.date,
    builds_with: Mapping[str, Sequence[UpstreamVersion]],
) -> list[UpstreamFinding]:
    """Findings on the release's Python list, as of `on` (the release date, else today); a
    CPython counts as released only when it is, by `today` too.  `builds_with`: each axis
    dependency → the version each of its values builds with (each must ship the new Python)."""
    where = release.at("python")
    listed = ", ".join(str(p) for p in release.python)
    findings = []
    for python, end in pythons_past_eol(release, on):
        findings.append(
            UpstreamFinding(
                kind="python-eol",
                subject=f"Python {python}",
                message=f"Python {python} reached end of life on {end} (RF-L001 on {on})",
                due=True,
                where=where,
                current=listed,
                source=UpstreamSource(file="python_eol.yaml", line=f'"{python.version}": {end}'),
                change=SetPythons(drop=(str(python),)),
            )
        )
    newest = max((p.version for p in release.python), default=Version("3.0"))
    versions = [v for found in builds_with.values() for v in found]
    for text, date in sorted(python_release_dates().items(), key=lambda item: Version(item[0])):
        version = Version(text)
        if version <= newest or date > min(on, today):
            continue
        tag = f"cp{version.major}{version.minor}"
        lacking = [str(v) for v in versions if not ships_for(v, version)]
        if lacking:
            verb = "has" if len(lacking) == 1 else "have"
            findings.append(
                UpstreamFinding(
                    kind="python-waiting",
                    subject=f"Python {text}",
                    message=f"Python {text} is out ({date}), but {_and(lacking)} {verb} "
                    f"no {tag} wheel yet",
                    due=False,
                    where=where,
                    current=listed,
                )
            )
            break  # a newer CPython waits for this one
        shipped = _and([str(v) for v in versions]) if versions else ""
        findings.append(
            UpstreamFinding(
                kind="python-new",
                subject=f"Python {text}",
                message=f"Python {text} was released on {date}"
                + (
                    f"; {shipped} {'ships' if len(versions) == 1 else 'ship'} {tag} wheels"
                    if versions
                    else ""
                ),
                due=True,
                where=where,
                current=listed,
                source=UpstreamSource(file="python_releases.yaml", line=f'"{text}": {date}'),
                change=SetPythons(add=(text,)),
            )
        )
    return findings


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def ships_for(release: UpstreamVersion, python: Version) -> bool:
    """Whether the version has a wheel that installs on CPython `python` (its own cpXY tag, an
    older stable-ABI tag, or a pure-Python tag); a version without wheels builds anywhere."""
    wheels = release.wheels
    if not wheels:
        return True
    for file in wheels:
        try:
            tags: frozenset[Tag] = parse_wheel_filename(file.filename)[3]
        except InvalidWheelFilename:
            continue
        if any(_installs(tag, python) for tag in tags):
            return True
    return False


def _installs(tag: Tag, python: Version) -> bool:
    wanted = f"cp{python.major}{python.minor}"
    if tag.interpreter == wanted and tag.abi in (wanted, "abi3", "none"):
        return True
    if tag.interpreter.startswith("cp") and tag.abi == "abi3":
        digits = tag.interpreter[2:]
        return digits.isdigit() and (int(digits[0]), int(digits[1:] or 0)) <= python.release[:2]
    return tag.interpreter in ("py3", f"py{python.major}{python.minor}") and tag.abi == "none"
