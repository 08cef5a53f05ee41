"""Why a cell exists, or why it does not: the definitions that produce it (with file:line), or the
exclude rule that removed it, or the part of the id that no release definition offers."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from relforge.errors import Span
from relforge.matrix.cell import Cell
from relforge.matrix.describe import python_label, variant_label
from relforge.matrix.expand import Candidate, candidates
from relforge.matrix.schema import Matrix, Release
from relforge.matrix.selector import selector_from_match

Status = Literal["built", "excluded", "not-offered", "unknown"]


@dataclass(frozen=True)
class Reason:
    text: str
    where: Span | None = None


@dataclass(frozen=True)
class Explanation:
    cell_id: str
    release: str
    status: Status
    summary: str
    reasons: tuple[Reason, ...] = ()
    cell: Cell | None = None
    suggestions: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "release": self.release,
            "status": self.status,
            "summary": self.summary,
            "reasons": [
                {"text": r.text, "where": str(r.where) if r.where else None} for r in self.reasons
            ],
            "cell": self.cell.to_json() if self.cell else None,
            "suggestions": list(self.suggestions),
        }


def explain_cell(matrix: Matrix, release_name: str, cell_id: str) -> Explanation:
    """Why `cell_id` is built in a release, which rule excludes it, or why no axis value offers
    it (or that the id is unknown)."""
    release = matrix.release(release_name)
    offered = {c.cell.id: c for c in candidates(matrix, release)}
    found = offered.get(cell_id)
    if found is not None and found.built:
        return Explanation(
            cell_id,
            release.name,
            "built",
            f"{cell_id} is built in release {release.name}.",
            _provenance(matrix, release, found),
            found.cell,
        )
    if found is not None:
        rule = found.excluded_by
        assert rule is not None
        return Explanation(
            cell_id,
            release.name,
            "excluded",
            f"{cell_id} would be built, but an exclude rule removes it: {rule.reason}",
            (
                Reason(
                    f"exclude rule {selector_from_match(rule.match, release.axes)}: {rule.reason}",
                    rule.span,
                ),
                *_provenance(matrix, release, found),
            ),
            found.cell,
        )
    serving = _served_by_abi3(offered.values(), cell_id)
    if serving is not None:
        return Explanation(
            cell_id,
            release.name,
            "not-offered",
            f"{cell_id} is not a cell of its own: the abi3 wheel {serving.cell.id} serves "
            f"Python {', '.join(serving.cell.serves_python)}.",
            _provenance(matrix, release, serving),
            serving.cell,
        )
    missing = _not_offered(matrix, release, cell_id)
    if missing is not None:
        return missing
    built = [cid for cid, c in offered.items() if c.built]
    close = tuple(difflib.get_close_matches(cell_id, built, n=5, cutoff=0.6))
    return Explanation(
        cell_id,
        release.name,
        "unknown",
        f"no cell of release {release.name} has the id {cell_id!r}.",
        suggestions=close,
    )


def _served_by_abi3(offered: Iterable[Candidate], cell_id: str) -> Candidate | None:
    """The abi3 cell whose wheel serves the Python of a per-Python id
    (`wheel-linux-x86_64-py3.11-cpu` → `wheel-linux-x86_64-cp39-abi3-cpu`)."""
    for candidate in offered:
        cell = candidate.cell
        for python in cell.serves_python:
            per_python = cell.id.replace(f"-{cell.python_tag}-abi3-", f"-py{python}-", 1)
            if per_python == cell_id:
                return candidate
    return None


def _provenance(matrix: Matrix, release: Release, candidate: Candidate) -> tuple[Reason, ...]:
    cell = candidate.cell
    reasons = [
        Reason(
            f"release {release.name}"
            + (f" (extends {release.extends})" if release.extends else ""),
            release.span,
        )
    ]
    platform = release.platforms[cell.platform]
    variant = release.accelerators[cell.variant]
    on = variant.platforms.get(cell.platform)
    reasons.append(
        Reason(f"platform {cell.platform}: {platform.os} {platform.arch}", platform.at("os"))
    )
    if cell.serves_python:
        owner = variant if variant.abi3 is not None else release
        reasons.append(
            Reason(
                f"abi3 floor {cell.limited_api}: one {cell.python_tag}-abi3 wheel for Python "
                f"{', '.join(cell.serves_python)}, built with {cell.python}",
                owner.at("abi3"),
            )
        )
    elif cell.python is not None:
        reasons.append(
            Reason(f"Python {cell.python} is in the release's python list", release.at("python"))
        )
    reasons.append(
        Reason(
            f"variant {cell.variant}: {variant_label(cell.variant, variant)}, {variant.status}",
            variant.span,
        )
    )
    if cell.package_type == "wheel" and on is not None:
        reasons.append(Reason(f"{cell.variant} is built on {cell.platform}", on.span))
        tag_from = on if on.platform_tag else platform
        reasons.append(Reason(f"platform tag {cell.platform_tag}", tag_from.at("platform_tag")))
        abi_from = on if on.cxx11_abi is not None else platform
        reasons.append(
            Reason(f"C++11 ABI {'on' if cell.cxx11_abi else 'off'}", abi_from.at("cxx11_abi"))
        )
        if cell.bundles_libraries:
            copy = candidate.included_by
            bundled_by = copy.set if copy and copy.set.bundle_libraries is not None else on
            reasons.append(
                Reason(
                    "bundles its libraries (no extra install requirements)",
                    bundled_by.at("bundle_libraries"),
                )
            )
        elif cell.extra_install_requires:
            reasons.append(
                Reason(
                    f"{len(cell.extra_install_requires)} extra install requirements",
                    variant.at("extra_install_requires"),
                )
            )
    for axis, key in cell.axes.items():
        value = release.axes[axis][key]
        installs = ", ".join(value.install)
        wants = ", ".join(value.requires) or "nothing"
        reasons.append(
            Reason(f"axis {axis}={key}: builds with {installs}, needs {wants}", value.span)
        )
    if cell.axes or release.local_label != "+{variant}":
        label = f"+{cell.local_version}" if cell.local_version else "no local label"
        reasons.append(
            Reason(f"{label} (local_label {release.local_label!r})", release.at("local_label"))
        )
    for adds in release.runtime_requires:
        if cell.package_type == "wheel" and selector_from_match(adds.match, release.axes).matches(
            cell
        ):
            reasons.append(Reason(f"requires {', '.join(adds.add)}: {adds.reason}", adds.span))
    if cell.package_type == "archive" and release.libtorch is not None:
        reasons.append(
            Reason(
                f"native archive {cell.libtorch_variant}, config {cell.libtorch_config}",
                release.libtorch.span,
            )
        )
    if cell.pypi_default:
        reasons.append(
            Reason(
                f"the PyPI default variant of {cell.platform}",
                _pypi_default_set_at(matrix, release, cell.platform),
            )
        )
    if candidate.included_by is not None:
        rule = candidate.included_by
        reasons.append(
            Reason(
                f"extra copy of {cell.extra_of} made by an include rule: {rule.reason}", rule.span
            )
        )
    if candidate.excluded_by is None:
        reasons.append(Reason("no exclude rule matches it"))
    return tuple(reasons)


def _pypi_default_set_at(matrix: Matrix, release: Release, platform: str) -> Span:
    """The `pypi_default:` that chose this platform's variant: the release's own, or the one of
    the earlier release it inherited the choice from."""
    chosen = release.pypi_default.get(platform)
    current = release
    while current.extends in matrix.releases:
        base = matrix.releases[current.extends]
        if base.pypi_default.get(platform) != chosen:
            break
        current = base
    return current.at("pypi_default")


def _not_offered(matrix: Matrix, release: Release, cell_id: str) -> Explanation | None:
    """Explain ids made of names the matrix knows (in any release) that this release lacks."""
    platforms = {p for r in matrix.releases.values() for p in r.platforms}
    variants = {v for r in matrix.releases.values() for v in r.accelerators}
    pythons = {str(p) for r in matrix.releases.values() for p in r.python}
    for pname in platforms:
        for vname in variants:
            for py in pythons:
                if cell_id == f"wheel-{pname}-py{py}-{vname}":
                    return _why_no_wheel(matrix, release, cell_id, pname, py, vname)
    copy = _not_copied(matrix, release, cell_id)
    if copy is not None:
        return copy
    if cell_id.startswith("libtorch-"):
        lib = release.libtorch
        if lib is None:
            return Explanation(
                cell_id,
                release.name,
                "not-offered",
                f"release {release.name} builds no native archives.",
                (Reason("no `libtorch:` section", release.span),),
            )
        for pname in platforms:
            for vname in variants:
                prefix = f"libtorch-{pname}-{vname}-"
                if cell_id.startswith(prefix):
                    if pname not in lib.platforms:
                        text = f"native archives are not built on {pname}"
                        return _offered_not(cell_id, release, text, lib.at("platforms"))
                    wanted = lib.on(pname)
                    over = lib.per_platform.get(pname)
                    if vname not in wanted.accelerators:
                        text = f"native archives are not built for {vname} on {pname}"
                        where = over.at("accelerators") if over else lib.at("accelerators")
                        return _offered_not(cell_id, release, text, where)
                    text = (
                        f"the archive variant or config is not one of {list(wanted.variants)} × "
                        f"{list(wanted.configs)} on {pname}"
                    )
                    return _offered_not(cell_id, release, text, (over or lib).span)
    return None


def _not_copied(matrix: Matrix, release: Release, cell_id: str) -> Explanation | None:
    """Ids of include-rule copies (`…-full`) that this release does not make."""
    suffixes = {r.suffix for other in matrix.releases.values() for r in other.include}
    for suffix in sorted(suffixes, key=len, reverse=True):
        if not cell_id.endswith(f"-{suffix}"):
            continue
        source_id = cell_id.removesuffix(f"-{suffix}")
        rules = [r for r in release.include if r.suffix == suffix]
        if not rules:
            makers = [r.name for r in matrix.releases.values() if suffix in _suffixes(r)]
            text = f"no include rule makes -{suffix} copies in this release" + (
                f" (made in {', '.join(makers)})" if makers else ""
            )
            return _offered_not(cell_id, release, text, release.at("include"))
        offered = {c.cell.id: c for c in candidates(matrix, release)}
        source = offered.get(source_id)
        if source is None or not source.built:
            why = explain_cell(matrix, release.name, source_id)
            if why.status == "unknown":
                return None  # not a copy of anything this matrix knows: an unknown id
            text = f"it would copy {source_id}, which is not built ({why.summary.rstrip('.')})"
            return _offered_not(cell_id, release, text, rules[0].span)
        shown = "; ".join(str(selector_from_match(r.match, release.axes)) for r in rules)
        text = f"the include rule for -{suffix} copies does not match {source_id} ({shown})"
        return _offered_not(cell_id, release, text, rules[0].span)
    return None


def _suffixes(release: Release) -> set[str]:
    return {r.suffix for r in release.include}


def _offered_not(cell_id: str, release: Release, text: str, where: Span) -> Explanation:
    return Explanation(
        cell_id,
        release.name,
        "not-offered",
        f"{cell_id} is not built in release {release.name}: {text}.",
        (Reason(text, where),),
    )


def _why_no_wheel(
    matrix: Matrix, release: Release, cell_id: str, pname: str, py: str, vname: str
) -> Explanation:
    def where_else(has: Any) -> str:
        names = [r.name for r in matrix.releases.values() if has(r)]
        return f" (built in {', '.join(names)})" if names else ""

    if pname not in release.platforms:
        text = f"platform {pname} is not defined in this release" + where_else(
            lambda r: pname in r.platforms
        )
        return _offered_not(cell_id, release, text, release.at("platforms"))
    if py not in {str(p) for p in release.python}:
        label = python_label(
            next(p for r in matrix.releases.values() for p in r.python if str(p) == py)
        )
        text = f"Python {label} is not in the release's python list" + where_else(
            lambda r: py in {str(p) for p in r.python}
        )
        return _offered_not(cell_id, release, text, release.at("python"))
    if vname not in release.accelerators:
        text = f"variant {vname} is not defined in this release" + where_else(
            lambda r: vname in r.accelerators
        )
        return _offered_not(cell_id, release, text, release.at("accelerators"))
    variant = release.accelerators[vname]
    if release.axes and pname in variant.platforms:  # the id lacks its axis values
        ids = [
            c.cell.id for c in candidates(matrix, release) if c.cell.id.startswith(cell_id + "-")
        ]
        return Explanation(
            cell_id,
            release.name,
            "unknown",
            f"no cell of release {release.name} has the id {cell_id!r}: its cells name their "
            f"{', '.join(release.axes)} value too.",
            suggestions=tuple(ids),
        )
    built_on = ", ".join(variant.platforms) or "no platform"
    text = f"variant {vname} is not built on {pname} (it is built on {built_on})"
    return _offered_not(cell_id, release, text, variant.at("platforms"))
