"""The CPython support policy on a date: drop what is past end of life (RF-L001's rule), add the
newest CPython once it is released and every axis dependency ships wheels for it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from relforge.matrix.lint import python_release_dates, pythons_past_eol
from relforge.matrix.schema import Release
from relforge.upstream.index import UpstreamVersion
from relforge.upstream.model import Finding, SetPythons, Source


def check_pythons(
    release: Release,
    on: datetime.date,
    today: datetime.date,
    references: Mapping[str, UpstreamVersion | None],
) -> list[Finding]:
    """Findings on the release's Python list, as of `on` (the release date, else today); a
    CPython counts as released only when it is, by `today` too.  `references`: each axis
    dependency → the version the axis builds with."""
    where = release.at("python")
    listed = ", ".join(str(p) for p in release.python)
    findings = []
    for python, end in pythons_past_eol(release, on):
        findings.append(
            Finding(
                kind="python-eol",
                subject=f"Python {python}",
                message=f"Python {python} reached end of life on {end} (RF-L001 on {on})",
                due=True,
                where=where,
                current=listed,
                source=Source(file="python_eol.yaml", line=f'"{python.version}": {end}'),
                change=SetPythons(drop=(str(python),)),
            )
        )
    newest = max((p.version for p in release.python), default=Version("3.0"))
    released = python_release_dates()
    for text, date in sorted(released.items(), key=lambda item: Version(item[0])):
        version = Version(text)
        if version <= newest or date > min(on, today):
            continue
        lacking = [
            f"{name} {ref.version}"
            for name, ref in references.items()
            if ref is not None and not ships_for(ref, version)
        ]
        if lacking:
            findings.append(
                Finding(
                    kind="python-waiting",
                    subject=f"Python {text}",
                    message=f"Python {text} is out ({date}), but {' and '.join(lacking)} "
                    f"{'has' if len(lacking) == 1 else 'have'} no "
                    f"cp{version.major}{version.minor} wheel yet",
                    due=False,
                    where=where,
                    current=listed,
                )
            )
            break  # a newer CPython waits for this one
        findings.append(
            Finding(
                kind="python-new",
                subject=f"Python {text}",
                message=f"Python {text} was released on {date}"
                + (
                    " and "
                    + ", ".join(f"{n} {r.version}" for n, r in references.items() if r)
                    + " ship wheels for it"
                    if any(references.values())
                    else ""
                ),
                due=True,
                where=where,
                current=listed,
                source=Source(file="python_releases.yaml", line=f'"{text}": {date}'),
                change=SetPythons(add=(text,)),
            )
        )
    return findings


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
