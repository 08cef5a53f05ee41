"""Policy checks of a matrix, each with a stable ID (RF-Lnnn), like a linter's rules.

Load-time checks (relforge.matrix.consistency) reject files that contradict themselves; lint
findings are about policy: a matrix can be valid and still ship a Python past its end of life.
"""

from __future__ import annotations

import datetime
import functools
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import yaml
from packaging.utils import canonicalize_name
from packaging.version import Version

from relforge.errors import Span
from relforge.matrix.describe import variant_label
from relforge.matrix.expand import candidates
from relforge.matrix.schema import Matrix, Release
from relforge.matrix.selector import selector_from_match
from relforge.matrix.values import PythonVersion, parse_requirement, pinned_version

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class LintRule:
    id: str
    name: str
    severity: Severity
    doc: str


@dataclass(frozen=True)
class LintFinding:
    rule: LintRule
    release: str
    message: str
    where: Span

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.rule.id,
            "name": self.rule.name,
            "severity": self.rule.severity,
            "release": self.release,
            "message": self.message,
            "where": str(self.where),
        }


Check = Callable[[Matrix, Release], Iterator[tuple[str, Span]]]
RULES: dict[str, LintRule] = {}
_CHECKS: list[tuple[LintRule, Check]] = []


def _rule(rule_id: str, name: str, severity: Severity, doc: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        rule = LintRule(rule_id, name, severity, doc)
        assert rule_id not in RULES, rule_id
        RULES[rule_id] = rule
        _CHECKS.append((rule, check))
        return check

    return register


def lint_matrix(matrix: Matrix, releases: list[str] | None = None) -> list[LintFinding]:
    """Every lint rule's findings on `releases` (default: all) of a loaded matrix."""
    names = releases or list(matrix.releases)
    findings = []
    for name in names:
        release = matrix.release(name)
        for rule, check in _CHECKS:
            findings += [
                LintFinding(rule, name, msg, where) for msg, where in check(matrix, release)
            ]
    return findings


@functools.cache
def _dates(name: str) -> dict[str, datetime.date]:
    text = resources.files("relforge.resources").joinpath(name).read_text("utf-8")
    return {str(k): v for k, v in yaml.safe_load(text).items()}


def python_eol_dates() -> dict[str, datetime.date]:
    """CPython end-of-life dates, shipped as data (resources/python_eol.yaml)."""
    return _dates("python_eol.yaml")


def python_release_dates() -> dict[str, datetime.date]:
    """CPython X.Y.0 release dates, shipped as data (resources/python_releases.yaml)."""
    return _dates("python_releases.yaml")


@_rule(
    "RF-L001",
    "python-past-eol",
    "warning",
    "A Python version had reached its CPython end of life on the release date.",
)
def _python_eol(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    if release.date is None:
        return
    for python, end in pythons_past_eol(release, release.date):
        yield (
            f"Python {python} reached end of life on {end}, before the release date {release.date}",
            release.at("python"),
        )


def pythons_past_eol(
    release: Release, on: datetime.date
) -> list[tuple[PythonVersion, datetime.date]]:
    """The release's Pythons (free-threaded ones too) whose CPython end of life is on or before
    `on`, each with that date: RF-L001 on the release date; `upstream check` on its policy date."""
    eol = python_eol_dates()
    out = []
    for python in release.python:
        end = eol.get(str(python.version))
        if end is not None and end <= on:
            out.append((python, end))
    return out


@_rule(
    "RF-L002",
    "too-many-stable-cuda",
    "warning",
    "More than two stable CUDA minor versions: each doubles build and test cost.",
)
def _stable_cuda(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    stable = sorted(
        {
            v.short_version
            for v in release.accelerators.values()
            if v.kind == "cuda" and v.status == "stable"
        }
    )
    if len(stable) > 2:
        yield (
            f"{len(stable)} stable CUDA versions ({', '.join(stable)}); keep at most two",
            release.at("accelerators"),
        )


@_rule(
    "RF-L003",
    "inconsistent-cuda-pins",
    "error",
    "The same CUDA version is pinned differently (between variants of a release, or for the "
    "same full toolkit version across releases).",
)
def _cuda_pins(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for name, variant in release.accelerators.items():
        if variant.kind == "cuda":
            groups[variant.short_version].append(name)
    for version, names in groups.items():
        seen: dict[str, tuple[str, str]] = {}
        for name in names:
            variant = release.accelerators[name]
            facts = {"cuDNN": str(variant.cudnn or ""), "NCCL": str(variant.nccl or "")}
            facts |= {
                _pin_key(t): str(pinned_version(t) or "") for t in variant.extra_install_requires
            }
            for key, value in facts.items():
                if not value:
                    continue
                first = seen.setdefault(key, (name, value))
                if first[1] != value:
                    yield (
                        f"CUDA {version}: {key} is {first[1]} in {first[0]} but {value} in {name}",
                        variant.span,
                    )
    # The toolkit's own wheels (runtime, nvrtc, cupti) follow the full CUDA version.
    for other in matrix.releases.values():
        if other.name == release.name:
            continue
        for name, variant in release.accelerators.items():
            for oname, ovariant in other.accelerators.items():
                if (
                    variant.kind != "cuda"
                    or ovariant.kind != "cuda"
                    or variant.version != ovariant.version
                ):
                    continue
                mine = _toolkit_pins(variant.extra_install_requires)
                theirs = _toolkit_pins(ovariant.extra_install_requires)
                for pkg in mine.keys() & theirs.keys():
                    if mine[pkg] != theirs[pkg] and Version(release.name) > Version(other.name):
                        yield (
                            f"CUDA {variant.version}: {pkg} is {mine[pkg]} in {name} of "
                            f"{release.name} but {theirs[pkg]} in {oname} of {other.name}",
                            variant.at("extra_install_requires"),
                        )


def _pin_key(text: str) -> str:
    req = parse_requirement(text)
    return canonicalize_name(req.name) + (f"; {req.marker}" if req.marker else "")


def _toolkit_pins(requires: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for text in requires:
        name = canonicalize_name(parse_requirement(text).name)
        if name.startswith(("nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti")):
            out[name] = str(pinned_version(text) or "")
    return out


@_rule(
    "RF-L004",
    "pypi-default-not-built",
    "error",
    "The variant named as a platform's PyPI default is not built for that platform.",
)
def _pypi_default(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    built = {
        (c.cell.platform, c.cell.variant)
        for c in candidates(matrix, release)
        if c.built and c.cell.package_type == "wheel"
    }
    for platform, variant in release.pypi_default.items():
        if (platform, variant) not in built:
            label = variant_label(variant, release.accelerators[variant])
            yield (
                f"the PyPI default of {platform} is {label}, which is not built for {platform}",
                release.at("pypi_default"),
            )


@_rule(
    "RF-L005",
    "rule-matches-nothing",
    "warning",
    "An exclude, include or runtime_requires rule matches no cell: it is stale or mistyped.",
)
def _dead_rules(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    cells = [c.cell for c in candidates(matrix, release)]
    for rule in (*release.exclude, *release.include, *release.runtime_requires):
        selector = selector_from_match(rule.match, release.axes)
        if not any(selector.matches(c) for c in cells):
            yield f"the rule {selector} ({rule.reason}) matches no cell", rule.span


@_rule(
    "RF-L006",
    "release-date-missing",
    "warning",
    "A release without `date:` cannot be checked against Python end-of-life dates.",
)
def _no_date(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    if release.date is None:
        yield "no release date; Python end of life is not checked", release.span


@_rule(
    "RF-L007",
    "duplicate-build",
    "warning",
    "Two variants build the same thing on a platform (same accelerator, version, platform "
    "tag and C++ ABI).",
)
def _duplicates(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    for pname, platform in release.platforms.items():
        seen: dict[tuple[Any, ...], str] = {}
        for name, variant in release.accelerators.items():
            on = variant.platforms.get(pname)
            if on is None:
                continue
            key = (
                variant.kind,
                variant.version,
                on.platform_tag or platform.platform_tag,
                platform.cxx11_abi if on.cxx11_abi is None else on.cxx11_abi,
                on.bundle_libraries,
                variant.extra_install_requires,
            )
            if key in seen:
                yield (f"{name} builds the same as {seen[key]} on {pname}", variant.span)
            else:
                seen[key] = name


@_rule(
    "RF-L008",
    "experimental-pypi-default",
    "warning",
    "A platform's PyPI default variant is marked experimental.",
)
def _experimental_default(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    for platform, name in release.pypi_default.items():
        if release.accelerators[name].status == "experimental":
            yield (
                f"the PyPI default of {platform} ({name}) is experimental",
                release.at("pypi_default"),
            )


@_rule(
    "RF-L020",
    "axis-without-requires",
    "warning",
    "A dependency axis value declares no runtime requirement: its wheels install next to any "
    "version of the dependency, including ones whose ABI they do not match.",
)
def _axis_without_requires(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    for axis, values in release.axes.items():
        for key, value in values.items():
            if not value.requires:
                yield f"axis {axis}={key} declares no `requires:`", value.span


@_rule(
    "RF-L021",
    "axis-requires-excludes-build",
    "error",
    "A dependency axis value's runtime requirement excludes the version its build installs "
    "(`install: [numpy==1.26.*]` with `requires: [numpy>=2]`).",
)
def _axis_requires_excludes(matrix: Matrix, release: Release) -> Iterator[tuple[str, Span]]:
    for axis, values in release.axes.items():
        for key, value in values.items():
            for text in value.install:
                built = parse_requirement(text)
                pins = [s.version.removesuffix(".*") for s in built.specifier if s.operator == "=="]
                for need in value.requires:
                    wanted = parse_requirement(need)
                    if canonicalize_name(wanted.name) != canonicalize_name(built.name):
                        continue
                    for pin in pins:
                        if not wanted.specifier.contains(pin, prereleases=True):
                            yield (
                                f"axis {axis}={key} builds with {text} but requires {need}",
                                value.at("requires"),
                            )
