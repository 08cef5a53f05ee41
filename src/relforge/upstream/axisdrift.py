"""Dependency axes against the upstream index: what each value builds with now, a value whose
versions are all yanked or gone, and each newer series of the dependency (torch 2.10 beside 2.9,
numpy 3.x beside 2.x) as a new value derived from the newest one's key and requirements."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.matrix.schema import AxisValue, Release
from relforge.matrix.source import Map
from relforge.matrix.values import parse_requirement
from relforge.upstream.index import ProjectPage, UpstreamIndex, UpstreamVersion
from relforge.upstream.model import AddAxisValue, UpstreamFinding, UpstreamSource
from relforge.upstream.sites import child

# An axis value key that names a version series: "2.9", "1.26", "2", "2.x" (the major series).
_SERIES_KEY = re.compile(r"(\d+(?:\.\d+)*)(?:\.([xX*]))?\Z")
# A version clause inside a requirement: operator, spacing, version (with a `.*` wildcard).
_CLAUSE = re.compile(r"(===|==|!=|~=|<=|>=|<|>)(\s*)([0-9][0-9A-Za-z.*+!_-]*)")

Series = tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class AxisResult:
    findings: list[UpstreamFinding]
    # The newest version of each value (new ones included), newest first: what the axis builds
    # with once updated, and so the wheels whose pins the release follows.
    builds_with: list[UpstreamVersion]

    @property
    def reference(self) -> UpstreamVersion | None:
        return self.builds_with[0] if self.builds_with else None


def axis_distribution(axis: str, values: Mapping[str, AxisValue]) -> str:
    """The distribution an axis follows: the install requirement named like the axis, else the
    newest value's first one."""
    names = [
        str(canonicalize_name(parse_requirement(t).name))
        for v in values.values()
        for t in v.install
    ]
    wanted = str(canonicalize_name(axis))
    return wanted if wanted in names else names[-1] if names else wanted


def check_axes(release: Release, own: Map | None, index: UpstreamIndex) -> dict[str, AxisResult]:
    """axis → its findings and the upstream version its newest value builds with."""
    out = {}
    for axis, values in release.axes.items():
        dist = axis_distribution(axis, values)
        out[axis] = _check_axis(release, axis, dist, values, own, index.project(dist))
    return out


def _spec(value: AxisValue, dist: str) -> SpecifierSet | None:
    for text in value.install:
        req = parse_requirement(text)
        if canonicalize_name(req.name) == dist:
            return req.specifier
    return None


def _check_axis(
    release: Release,
    axis: str,
    dist: str,
    values: Mapping[str, AxisValue],
    own: Map | None,
    project: ProjectPage | None,
) -> AxisResult:
    findings: list[UpstreamFinding] = []
    if project is None:
        last = list(values.values())[-1]
        findings.append(
            UpstreamFinding(
                kind="axis-gone",
                subject=dist,
                message=f"axis {axis}: the index has no project {dist}",
                due=True,
                where=last.span,
                manual="check the index URL, or the axis's requirements",
            )
        )
        return AxisResult(findings=findings, builds_with=[])
    available = project.available()
    covered: list[Version] = []
    newest: list[Version] = []
    for key, value in values.items():
        spec = _spec(value, dist)
        matched = [v for v in project.versions if spec is not None and spec.contains(v)]
        usable = [v for v in matched if v in available]
        covered += matched
        if usable:
            best = max(usable)
            newest.append(best)
            findings.append(
                UpstreamFinding(
                    kind="axis-covered",
                    subject=dist,
                    message=f"axis {axis}={key} builds with {dist} {best}, the newest it admits",
                    due=False,
                    where=value.span,
                    current=key,
                    upstream=str(best),
                )
            )
            continue
        if matched:
            reason = project.versions[max(matched)].yank_reason
            what = f"every {dist} version it admits ({', '.join(map(str, matched))}) is yanked"
            what += f": {reason}" if reason else ""
        else:
            what = f"the index has no {dist} version it admits"
        findings.append(
            UpstreamFinding(
                kind="axis-gone",
                subject=dist,
                message=f"axis {axis}={key}: {what}",
                due=True,
                where=value.at("install"),
                current=key,
                manual="choose a version the index offers, or drop the value",
            )
        )
    news, added = _new_series(release, axis, dist, values, own, project, covered)
    findings += news
    ordered = sorted({*newest, *added}, reverse=True)
    return AxisResult(findings=findings, builds_with=[project.versions[v] for v in ordered])


def _new_series(
    release: Release,
    axis: str,
    dist: str,
    values: Mapping[str, AxisValue],
    own: Map | None,
    project: ProjectPage,
    covered: list[Version],
) -> tuple[list[UpstreamFinding], list[Version]]:
    """Findings for the series newer than every value, and the newest version of each series
    update can add."""
    last_key, template = list(values.items())[-1]
    floor = max(covered, default=None)
    newer = [v for v in project.available() if floor is None or v > floor]
    if not newer:
        return [], []
    shape = _SERIES_KEY.match(last_key)
    groups: dict[Series, list[Version]] = {}
    size = len(shape.group(1).split(".")) if shape else 1
    for version in newer:
        groups.setdefault(_series(version, size), []).append(version)
    findings = []
    added: list[Version] = []
    after = last_key
    for series, versions in sorted(groups.items()):
        best = max(versions)
        change, why = _derive(axis, dist, last_key, template, series, best, after)
        if change is not None and child(own, "axes", axis) is None:
            change, why = (
                None,
                (
                    f"the axis is written in the release {release.extends or 'it extends'}; "
                    f"write the axis into releases.{release.name}.axes.{axis} with the value"
                ),
            )
        label = change.key if change else ".".join(map(str, series))
        written = (
            f"; new value {axis}={change.key} (install {', '.join(change.install)})"
            if change
            else ""
        )
        findings.append(
            UpstreamFinding(
                kind="axis-new",
                subject=dist,
                message=f"{dist} {best} is out: axis {axis} has no value for it (newest: "
                f"{last_key}){written}",
                due=True,
                where=template.span,
                current=last_key,
                upstream=str(best),
                source=_source(project.versions[best]),
                change=change,
                manual=why,
            )
        )
        if change is None:
            break  # a later series must not be added past one that was not
        added.append(best)
        after = label
    return findings, added


def _source(version: UpstreamVersion) -> UpstreamSource:
    """The file a new version is named by: the wheel that speaks for it, else its first file."""
    file = version.representative() or sorted(version.files, key=lambda f: f.filename)[0]
    return UpstreamSource(file=file.filename, sha256=file.sha256)


def _series(version: Version, size: int) -> Series:
    return (*version.release, *([0] * size))[:size]


def _derive(
    axis: str,
    dist: str,
    key: str,
    template: AxisValue,
    series: Series,
    best: Version,
    after: str,
) -> tuple[AddAxisValue | None, str]:
    """The value for `series`, written like the template (the newest value); or why not."""
    shape = _SERIES_KEY.match(key)
    if shape is None:
        return None, f"the key {key!r} names no version series; add the value yourself"
    old = tuple(int(p) for p in shape.group(1).split("."))
    new_key = ".".join(map(str, series)) + (f".{shape.group(2)}" if shape.group(2) else "")
    install = [_shifted(t, dist, old, series, best) for t in template.install]
    requires = [_shifted(t, dist, old, series, best) for t in template.requires]
    if any(t is None for t in (*install, *requires)):
        return None, f"cannot carry the requirements of {axis}={key} over to {new_key}"
    for text in (*install, *requires):
        assert text is not None
        req = parse_requirement(text)
        if canonicalize_name(req.name) == dist and not req.specifier.contains(best):
            return None, f"{text!r}, derived from {axis}={key}, would not admit {dist} {best}"
    return (
        AddAxisValue(
            axis=axis,
            key=new_key,
            after=after,
            install=tuple(t for t in install if t is not None),
            requires=tuple(t for t in requires if t is not None),
            index=template.index,
        ),
        "",
    )


def _shifted(text: str, dist: str, old: Series, new: Series, best: Version) -> str | None:
    """`text` with every version of the old series moved to the new one (its upper bound, the
    series after the old one, to the series after the new one; an exact pin to `best`); other
    requirements as written.  None when a version cannot be carried over (pre-releases, local
    versions)."""
    req = parse_requirement(text)
    if canonicalize_name(req.name) != dist:
        return text
    head, sep, marker = text.partition(";")
    after_old = (*old[:-1], old[-1] + 1)
    after_new = (*new[:-1], new[-1] + 1)
    failed = False

    def move(match: re.Match[str]) -> str:
        nonlocal failed
        operator, space, raw = match.groups()
        star = raw.endswith(".*")
        try:
            version = Version(raw.removesuffix(".*"))
        except InvalidVersion:
            failed = True
            return match.group(0)
        if version.pre or version.post or version.dev or version.local or version.epoch:
            failed = True
            return match.group(0)
        parts = version.release
        size = len(old)
        padded = (*parts, *([0] * size))[:size]
        if len(parts) >= size and padded == old:
            exact = operator in ("==", "===") and not star and len(parts) > size
            moved = best.release if exact else (*new, *parts[size:])
        elif padded == after_old and all(p == 0 for p in parts[size:]):
            moved = (*after_new, *parts[size:])
        else:
            return match.group(0)
        return operator + space + ".".join(map(str, moved)) + (".*" if star else "")

    shifted = _CLAUSE.sub(move, head[len(req.name) :])
    return None if failed else head[: len(req.name)] + shifted + sep + marker
