"""Compare two releases (of one file, two files or two git revisions): what a release engineer
writes in the "Releng" section of release notes, computed instead of remembered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from relforge.matrix.describe import join_words, python_label, variant_label
from relforge.matrix.expand import expand_cells
from relforge.matrix.schema import Matrix, Release, Variant
from relforge.matrix.values import parse_requirement


@dataclass(frozen=True)
class Change:
    subject: str
    field: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class PinChanges:
    variant: str
    label: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)


@dataclass(frozen=True)
class Availability:
    platform: str
    added: list[str]
    removed: list[str]


@dataclass(frozen=True)
class CellCount:
    package_type: str
    platform: str
    old: int
    new: int


@dataclass(frozen=True)
class MatrixDiff:
    title: str
    old: str
    new: str
    python_added: list[str]
    python_removed: list[str]
    variants_added: list[dict[str, Any]]
    variants_removed: list[dict[str, Any]]
    variants_changed: list[Change]
    platforms_added: list[str]
    platforms_removed: list[str]
    platforms_changed: list[Change]
    availability: list[Availability]
    pins: list[PinChanges]
    pypi_default: list[Change]
    cells: list[CellCount]
    cells_added: list[str]
    cells_removed: list[str]
    axes: list[Change] = field(default_factory=list)  # dependency axes and the local label

    @property
    def empty(self) -> bool:
        return not (
            self.cells_added
            or self.cells_removed
            or self.variants_changed
            or self.platforms_changed
            or self.pins
            or self.pypi_default
            or self.axes
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _variant_facts(variant: Variant) -> dict[str, str | None]:
    return {
        "version": str(variant.version) if variant.version else None,
        "status": variant.status,
        "cuDNN": str(variant.cudnn) if variant.cudnn else None,
        "NCCL": str(variant.nccl) if variant.nccl else None,
        "arch list": ";".join(variant.arch_list) or None,
        "nvcc flags": " ".join(variant.nvcc_flags) or None,
    }


def _variant_summary(name: str, variant: Variant) -> dict[str, Any]:
    return {
        "name": name,
        "label": variant_label(name, variant),
        "kind": variant.kind,
        "platforms": list(variant.platforms),
        **{k: v for k, v in _variant_facts(variant).items() if v is not None},
    }


def _pin_changes(
    name: str, label: str, before: dict[str, str], after: dict[str, str]
) -> PinChanges:
    return PinChanges(
        name,
        label,
        added=[_spec(after[k]) for k in after if k not in before],
        removed=[_spec(before[k]) for k in before if k not in after],
        changed=[
            Change(k.split(";")[0], "pin", _spec(before[k]), _spec(after[k]))
            for k in after
            if k in before and _spec(before[k]) != _spec(after[k])
        ],
    )


def _pins(requirements: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for text in requirements:
        req = parse_requirement(text)
        key = canonicalize_name(req.name) + (f"; {req.marker}" if req.marker else "")
        out[key] = text
    return out


def _spec(text: str) -> str:
    req = parse_requirement(text)
    return f"{req.name}{req.specifier}"


def diff_releases(
    old_matrix: Matrix,
    old_name: str,
    new_matrix: Matrix,
    new_name: str,
    *,
    old_label: str | None = None,
    new_label: str | None = None,
) -> MatrixDiff:
    """What changed between release `old_name` of `old_matrix` and `new_name` of
    `new_matrix`: Python versions, accelerator variants and their pins, runtime requirements,
    platforms and per-cell availability, for `relforge matrix diff` and release notes."""
    old = old_matrix.release(old_name)
    new = new_matrix.release(new_name)
    old_py = [str(p) for p in old.python]
    new_py = [str(p) for p in new.python]
    variants_changed = []
    pins = []
    for name in [n for n in new.accelerators if n in old.accelerators]:
        before, after = old.accelerators[name], new.accelerators[name]
        label = variant_label(name, after)
        a, b = _variant_facts(before), _variant_facts(after)
        variants_changed += [Change(label, k, a[k], b[k]) for k in a if a[k] != b[k]]
        change = _pin_changes(
            name, label, _pins(before.extra_install_requires), _pins(after.extra_install_requires)
        )
        if change.added or change.removed or change.changed:
            pins.append(change)
    runtime = _pin_changes(
        "runtime_requires",
        "Runtime requirements",
        _pins(r for rule in old.runtime_requires for r in rule.add),
        _pins(r for rule in new.runtime_requires for r in rule.add),
    )
    if runtime.added or runtime.removed or runtime.changed:
        pins.append(runtime)
    platforms_changed = []
    for pname in [p for p in new.platforms if p in old.platforms]:
        a_p, b_p = old.platforms[pname], new.platforms[pname]
        for key in ("os", "arch", "platform_tag", "cxx11_abi"):
            if getattr(a_p, key) != getattr(b_p, key):
                platforms_changed.append(
                    Change(pname, key, _word(getattr(a_p, key)), _word(getattr(b_p, key)))
                )
    availability = []
    for pname in new.platforms:
        if pname not in old.platforms:
            continue
        before_on = {v for v, spec in old.accelerators.items() if pname in spec.platforms}
        after_on = {v for v, spec in new.accelerators.items() if pname in spec.platforms}
        added = [
            variant_label(v, new.accelerators[v])
            for v in new.accelerators
            if v in after_on - before_on
        ]
        removed = [
            variant_label(v, old.accelerators[v])
            for v in old.accelerators
            if v in before_on - after_on
        ]
        if added or removed:
            availability.append(Availability(pname, added, removed))
    pypi = []
    for pname in dict.fromkeys([*old.pypi_default, *new.pypi_default]):
        a_v, b_v = old.pypi_default.get(pname), new.pypi_default.get(pname)
        if a_v != b_v:
            pypi.append(Change(pname, "PyPI default", _label_or(old, a_v), _label_or(new, b_v)))
    old_cells = expand_cells(old_matrix, old_name)
    new_cells = expand_cells(new_matrix, new_name)
    old_ids = {c.id for c in old_cells}
    new_ids = {c.id for c in new_cells}
    old_count = Counter((c.package_type, c.platform) for c in old_cells)
    new_count = Counter((c.package_type, c.platform) for c in new_cells)
    groups = list(dict.fromkeys([*old_count, *new_count]))
    title = new_matrix.project.title
    return MatrixDiff(
        title=title,
        old=old_label or old.name,
        new=new_label or new.name,
        python_added=[p for p in new_py if p not in old_py],
        python_removed=[p for p in old_py if p not in new_py],
        variants_added=[
            _variant_summary(n, v) for n, v in new.accelerators.items() if n not in old.accelerators
        ],
        variants_removed=[
            _variant_summary(n, v) for n, v in old.accelerators.items() if n not in new.accelerators
        ],
        variants_changed=variants_changed,
        platforms_added=[p for p in new.platforms if p not in old.platforms],
        platforms_removed=[p for p in old.platforms if p not in new.platforms],
        platforms_changed=platforms_changed,
        availability=availability,
        pins=pins,
        pypi_default=pypi,
        cells=[CellCount(t, p, old_count[(t, p)], new_count[(t, p)]) for t, p in groups],
        cells_added=[c.id for c in new_cells if c.id not in old_ids],
        cells_removed=[c.id for c in old_cells if c.id not in new_ids],
        axes=_axes_changes(old, new),
    )


def _axes_changes(old: Release, new: Release) -> list[Change]:
    """Axis values added, removed or built differently, and a changed local label."""

    def facts(release: Release, axis: str, key: str) -> str | None:
        value = release.axes.get(axis, {}).get(key)
        if value is None:
            return None
        needs = f", requires {', '.join(value.requires)}" if value.requires else ""
        return f"installs {', '.join(value.install)}{needs}"

    out = []
    for axis in dict.fromkeys([*old.axes, *new.axes]):
        keys = dict.fromkeys([*old.axes.get(axis, {}), *new.axes.get(axis, {})])
        for key in keys:
            a, b = facts(old, axis, key), facts(new, axis, key)
            if a != b:
                out.append(Change(axis, key, a, b))
    if old.local_label != new.local_label:
        out.append(Change("local label", "template", old.local_label, new.local_label))
    return out


def _word(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _label_or(release: Release, name: str | None) -> str | None:
    if name is None or name not in release.accelerators:
        return name
    return variant_label(name, release.accelerators[name])


def _python_words(names: list[str]) -> str:
    from relforge.matrix.values import PythonVersion

    return join_words([python_label(PythonVersion.parse(n)) for n in names])


def _facts_sentence(item: dict[str, Any]) -> str:
    parts = [item[k] for k in ("version",) if k in item]
    parts.append(item["status"])
    extra = [f"{k} {item[k]}" for k in ("cuDNN", "NCCL") if k in item]
    text = f"{item['label']} ({', '.join(parts)})"
    if extra:
        text += " with " + join_words(extra)
    if item["platforms"]:
        text += f", on {', '.join(item['platforms'])}"
    return text


_FIELD_WORDS = {"platform_tag": "platform tag", "cxx11_abi": "C++11 ABI"}


def render_markdown(diff: MatrixDiff) -> str:
    """The diff as the "Releng" section of release notes."""
    out = [f"## Releng: {diff.title} {diff.old} → {diff.new}", ""]

    def section(name: str, lines: list[str]) -> None:
        if lines:
            out.extend([f"### {name}", *[f"- {line}" for line in lines], ""])

    python = []
    if diff.python_removed:
        python.append(f"Removed Python {_python_words(diff.python_removed)}.")
    if diff.python_added:
        python.append(f"Added Python {_python_words(diff.python_added)}.")
    section("Python", python)
    accel = [f"Added {_facts_sentence(v)}." for v in diff.variants_added]
    accel += [f"Removed {_facts_sentence(v)}." for v in diff.variants_removed]
    accel += [
        f"{c.subject}: {c.field} {c.old or '—'} → {c.new or '—'}." for c in diff.variants_changed
    ]
    section("Accelerators", accel)
    plat = [f"Added platform {p}." for p in diff.platforms_added]
    plat += [f"Removed platform {p}." for p in diff.platforms_removed]
    plat += [
        f"{c.subject}: {_FIELD_WORDS.get(c.field, c.field)} {c.old} → {c.new}."
        for c in diff.platforms_changed
    ]
    for a in diff.availability:
        words = []
        if a.added:
            words.append(f"added {join_words(a.added)}")
        if a.removed:
            words.append(f"removed {join_words(a.removed)}")
        plat.append(f"{a.platform}: {'; '.join(words)}.")
    section("Platforms", plat)
    section(
        "PyPI default",
        [f"{c.subject}: {c.old or '—'} → {c.new or '—'}." for c in diff.pypi_default],
    )
    pins = []
    for p in diff.pins:
        words = []
        if p.added:
            words.append("added " + ", ".join(f"`{x}`" for x in p.added))
        if p.removed:
            words.append("removed " + ", ".join(f"`{x}`" for x in p.removed))
        if p.changed:
            words.append("changed " + ", ".join(f"`{c.old}` → `{c.new}`" for c in p.changed))
        pins.append(f"{p.label}: {'; '.join(words)}.")
    section("Pins", pins)
    section(
        "Dependency axes",
        [f"{c.subject} {c.field}: {c.old or '—'} → {c.new or '—'}." for c in diff.axes],
    )
    old_total = sum(c.old for c in diff.cells)
    new_total = sum(c.new for c in diff.cells)
    out += [
        "### Cells",
        "",
        f"| Package | Platform | {diff.old} | {diff.new} | Change |",
        "|---|---|---:|---:|---:|",
    ]
    for c in diff.cells:
        out.append(f"| {c.package_type} | {c.platform} | {c.old} | {c.new} | {c.new - c.old:+d} |")
    out.append(
        f"| **all** | | **{old_total}** | **{new_total}** | **{new_total - old_total:+d}** |"
    )
    out.append("")
    out.append(f"{len(diff.cells_added)} cells added, {len(diff.cells_removed)} removed.")
    return "\n".join(out) + "\n"
