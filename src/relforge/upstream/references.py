"""The upstream wheels whose pins a release follows: for each dependency, newest version first,
one wheel per local label with its METADATA read (PEP 658 or range requests), standing for the
variants its local label or CUDA version names (`+cu130`; an `nvidia-cuda-runtime` or
`cuda-toolkit` pin).  A variant follows the newest wheel that stands for it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from relforge.matrix.schema import Release
from relforge.matrix.values import pinned_version
from relforge.upstream.index import UpstreamIndex, UpstreamVersion
from relforge.upstream.metadata import MetadataUnreadable, WheelMetadata, read_metadata
from relforge.upstream.model import UpstreamFinding, UpstreamSource
from relforge.upstream.sites import PinSite

_CUDA_LABEL = re.compile(r"cu(\d+)(\d)\Z")  # cu128 → CUDA 12.8, cu130 → 13.0
# The distributions whose pin says a wheel's CUDA version (torch 2.11 pins cuda-toolkit).
_TOOLKIT = re.compile(r"(nvidia-cuda-runtime(-cu\d+)?|cuda-toolkit)\Z")


@dataclass(frozen=True, kw_only=True)
class Reference:
    """One upstream wheel whose Requires-Dist pins the release follows."""

    metadata: WheelMetadata
    variants: frozenset[str]
    requirements: tuple[tuple[Requirement, str], ...]  # parsed, as written (no extras)

    @property
    def file(self) -> str:
        return self.metadata.file.filename


def references(
    release: Release,
    followed: Iterable[list[UpstreamVersion]],
    index: UpstreamIndex,
    sites: list[PinSite],
) -> tuple[list[Reference], list[UpstreamFinding]]:
    """The wheels whose pins the release's pins follow.  `followed`: per dependency, its
    versions newest first.  A variant follows the newest wheel that stands for it (by local
    label or CUDA version), so an older version is read only while a pinned variant has none;
    a dependency whose newest wheel pins none of the release's pins is not read further."""
    needed = frozenset(v for s in sites for v in s.variants)
    names = {s.name for s in sites}
    refs: list[Reference] = []
    skipped: list[UpstreamFinding] = []
    claimed: set[str] = set()
    for versions in followed:
        for version in versions:
            if needed <= claimed:
                break
            found = _read(release, version, index, skipped)
            for ref in found:
                ref_variants = ref.variants - claimed
                claimed |= ref_variants
                if ref_variants:
                    refs.append(
                        Reference(
                            metadata=ref.metadata,
                            variants=frozenset(ref_variants),
                            requirements=ref.requirements,
                        )
                    )
            pins_any = any(
                canonicalize_name(req.name) in names for r in found for req, _ in r.requirements
            )
            if not pins_any:
                break
    return refs, skipped


def _read(
    release: Release, version: UpstreamVersion, index: UpstreamIndex, skipped: list[UpstreamFinding]
) -> list[Reference]:
    """One wheel per local label of the version, its METADATA read; unreadable ones named."""
    found = []
    for label in sorted({parse_wheel_filename(f.filename)[1].local or "" for f in version.wheels}):
        file = version.representative(label)
        if file is None:
            continue
        try:
            meta = read_metadata(index, file)
        except MetadataUnreadable as exc:
            skipped.append(
                UpstreamFinding(
                    kind="metadata-skipped",
                    subject=file.filename,
                    message=f"cannot read the METADATA of {file.filename}: {exc}; its pins are "
                    "not compared",
                    due=False,
                    source=UpstreamSource(file=file.filename, sha256=file.sha256),
                )
            )
            continue
        reqs = tuple(_requirements(meta))
        variants = _variants_of(release, label, reqs)
        found.append(Reference(metadata=meta, variants=variants, requirements=reqs))
    return found


def _requirements(meta: WheelMetadata) -> Iterable[tuple[Requirement, str]]:
    for line in meta.requires_dist():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        yield req, line


def _variants_of(
    release: Release, label: str, reqs: tuple[tuple[Requirement, str], ...]
) -> frozenset[str]:
    """The variants a wheel stands for: the one named like its local label, else the CUDA
    variants of the CUDA version its label or its nvidia-cuda-runtime pin says."""
    if label in release.accelerators:
        return frozenset({label})
    cuda = ""
    found = _CUDA_LABEL.match(label)
    if found:
        cuda = f"{found.group(1)}.{found.group(2)}"
    for req, _ in reqs:
        pinned = pinned_version(str(req))
        if not cuda and pinned and _TOOLKIT.match(canonicalize_name(req.name)):
            cuda = f"{pinned.major}.{pinned.minor}"
    return frozenset(
        name
        for name, variant in release.accelerators.items()
        if cuda and variant.kind == "cuda" and variant.short_version == cuda
    )
