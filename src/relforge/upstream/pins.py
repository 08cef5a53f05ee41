"""Pins against upstream: every `==` pin of the release's variants and runtime rules compared with
the Requires-Dist of the upstream wheels they follow (relforge.upstream.references); each pinned
version looked up on the index (yanked, gone); newer CUDA minors noted."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.matrix.consistency import pinned_field
from relforge.matrix.schema import Release
from relforge.matrix.source import Map, Scalar
from relforge.matrix.values import parse_requirement, pinned_version
from relforge.upstream.index import UpstreamIndex
from relforge.upstream.model import FieldEdit, Kind, SetPin, UpstreamFinding, UpstreamSource
from relforge.upstream.references import Reference
from relforge.upstream.sites import PinSite, child

_RUNTIME = re.compile(r"nvidia-cuda-runtime(-cu\d+)?\Z")


@dataclass(frozen=True, kw_only=True)
class Compared:
    """What one reference was compared with (for the report)."""

    file: str
    sha256: str | None
    via: str
    variants: tuple[str, ...]
    pins: int
    differing: int

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "sha256": self.sha256,
            "via": self.via,
            "variants": list(self.variants),
            "pins": self.pins,
            "differing": self.differing,
        }


@dataclass(frozen=True, kw_only=True)
class _Proposal:
    version: Version
    ref: Reference
    line: str

    @property
    def source(self) -> UpstreamSource:
        meta = self.ref.metadata
        return UpstreamSource(file=meta.file.filename, sha256=meta.file.sha256, line=self.line)


def compare_pins(
    release: Release, own: Map | None, sites: list[PinSite], refs: list[Reference]
) -> tuple[list[UpstreamFinding], list[Compared]]:
    """Each pin that differs from what its reference wheels declare, as a change (the pin, and a
    variant key that follows it), a change left to a person, or a refused contradiction."""
    findings: list[UpstreamFinding] = []
    counts = {id(r): [0, 0] for r in refs}
    for site in sites:
        proposals = []
        for ref in refs:
            if not ref.variants & site.variants:
                continue
            line = _matching(site, ref)
            if line is None:
                continue
            counts[id(ref)][0] += 1
            pinned = pinned_version(line)
            if pinned is not None and pinned != site.version:
                counts[id(ref)][1] += 1
                proposals.append(_Proposal(version=pinned, ref=ref, line=f"Requires-Dist: {line}"))
        if proposals:
            findings.append(_pin_finding(release, own, site, proposals))
    compared = [
        Compared(
            file=r.file,
            sha256=r.metadata.file.sha256,
            via=r.metadata.via,
            variants=tuple(sorted(r.variants)),
            pins=counts[id(r)][0],
            differing=counts[id(r)][1],
        )
        for r in refs
    ]
    return findings, compared


def _matching(site: PinSite, ref: Reference) -> str | None:
    """The reference's requirement line of the pinned distribution (by marker when it has
    several)."""
    same = [
        (req, line) for req, line in ref.requirements if canonicalize_name(req.name) == site.name
    ]
    if len(same) > 1:
        marker = str(parse_requirement(site.text).marker or "")
        same = [(req, line) for req, line in same if str(req.marker or "") == marker]
    return same[0][1] if len(same) == 1 else None


def _pin_finding(
    release: Release, own: Map | None, site: PinSite, proposals: list[_Proposal]
) -> UpstreamFinding:
    first = proposals[0]

    def finding(kind: Kind, message: str, **rest: Any) -> UpstreamFinding:
        return UpstreamFinding(
            kind=kind,
            subject=site.name,
            message=message,
            due=True,
            where=site.where,
            current=str(site.version),
            upstream=str(first.version),
            source=first.source,
            **rest,
        )

    if len({p.version for p in proposals}) > 1:
        told = "; ".join(f"{p.version} ({p.source.describe()})" for p in proposals)
        return finding(
            "pin-conflict",
            f"{site.text!r} ({site.where}): the upstream wheels it follows disagree: {told}",
            manual="refused: the upstream wheels it follows pin different versions",
        )
    message = (
        f"{site.name} {site.version} → {first.version} ({site.key}), as {first.source.file} "
        "declares"
    )
    if site.node is None:
        return finding(
            "pin-changed",
            message,
            manual=f"the pin is written at {site.where}, which release {release.name} inherits; "
            f"write the list into releases.{release.name} to change it there",
        )
    follows = []
    field = pinned_field(site.name) if ".accelerators." in site.key else None
    for vname in sorted(site.variants) if field else ():
        assert field is not None
        variant = release.accelerators[vname]
        declared = getattr(variant, field)
        if declared is None:
            continue
        node = child(own, "accelerators", vname, field)
        if not isinstance(node, Scalar):
            return finding(
                "pin-conflict",
                f"{site.text!r} ({site.where}) would become =={first.version}, which "
                f"contradicts `{field}: {declared}` ({variant.at(field)}), written in a release "
                f"that {release.name} extends",
                manual=f"refused: write `{field}: {first.version}` under "
                f"releases.{release.name}.accelerators.{vname} with the pin, then rerun",
            )
        follows.append(FieldEdit(key=field, node=node, new=str(first.version)))
    assert site.node is not None
    change = SetPin(
        node=site.node, old=site.text, new=repin(site.text, first.version), follows=tuple(follows)
    )
    return finding("pin-changed", message, change=change)


def repin(text: str, version: Version) -> str:
    """The requirement with its `==` version replaced, everything else as written."""
    req = parse_requirement(text)
    old = next(iter(req.specifier)).version
    head, sep, marker = text.partition(";")
    pattern = re.compile(r"(===?\s*)" + re.escape(old) + r"(?![0-9A-Za-z.*+!_-])")
    new_head, count = pattern.subn(lambda m: m.group(1) + str(version), head, count=1)
    new = new_head + sep + marker
    if count != 1 or pinned_version(new) != version:
        raise ValueError(f"cannot rewrite the version of {text!r}")
    return new


def on_index(sites: list[PinSite], index: UpstreamIndex) -> list[UpstreamFinding]:
    """Pinned versions the index yanked or does not have (each distribution version once)."""
    findings = []
    seen: set[tuple[str, Version]] = set()
    for site in sites:
        if (site.name, site.version) in seen:
            continue
        seen.add((site.name, site.version))
        project = index.project(site.name)
        found = project.versions.get(site.version) if project else None
        pin = f"{site.name}=={site.version} ({site.key})"
        if found is not None and not found.yanked:
            continue
        if found is None:
            what = f"the index has no {'project' if project is None else 'such version'}"
            kind: Kind = "pin-gone"
            manual = "pin a version the index offers"
        else:
            what = "yanked upstream" + (f": {found.yank_reason}" if found.yank_reason else "")
            kind = "pin-yanked"
            manual = "pin another version"
        findings.append(
            UpstreamFinding(
                kind=kind,
                subject=site.name,
                message=f"{pin}: {what}",
                due=True,
                where=site.where,
                current=str(site.version),
                manual=manual,
            )
        )
    return findings


def new_cuda(release: Release, sites: list[PinSite], index: UpstreamIndex) -> list[UpstreamFinding]:
    """CUDA minors newer than the release's, read from the nvidia-cuda-runtime pages it pins."""
    findings = []
    majors: dict[int, list[Version]] = {}
    for variant in release.accelerators.values():
        if variant.kind == "cuda" and variant.version is not None:
            majors.setdefault(variant.version.major, []).append(variant.version)
    for major, have in sorted(majors.items()):
        names = {s.name for s in sites if _RUNTIME.match(s.name) and s.version.major == major}
        for name in sorted(names):
            project = index.project(name)
            top = max(v.release[:2] for v in have)
            newer = [v for v in (project.available() if project else []) if v.major == major]
            best = max(newer, default=None)
            if best is None or best.release[:2] <= top:
                continue
            built = ", ".join(sorted({f"{v.major}.{v.minor}" for v in have}))
            findings.append(
                UpstreamFinding(
                    kind="cuda-new",
                    subject=name,
                    message=f"CUDA {best.major}.{best.minor} is on the index ({name} {best}); "
                    f"the release builds CUDA {built} (a new CUDA variant is a person's "
                    "decision: RF-L002 keeps at most two stable CUDA minors)",
                    due=False,
                    current=built,
                    upstream=str(best),
                )
            )
    return findings
