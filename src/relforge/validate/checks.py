"""The check registry: every check has a stable ID, a name and a one-line doc, like a linter's.

RF-V0xx are static checks of one wheel (some need its cell, some only the wheel itself),
RF-V1xx look at the whole set of artifacts, RF-R0xx install and run a wheel (runtime.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from relforge.manifest import Verdict, VerdictStatus
from relforge.matrix.cell import Cell
from relforge.validate.cxxabi import in_namespaces
from relforge.validate.facts import UNRECORDED, WheelFacts
from relforge.validate.policy import (
    LOADER_PREFIXES,
    declared_by,
    linux_environment,
    policy_for_tag,
    providers_of,
    tag_arch,
    violations,
)

Scope = Literal["artifact", "cell", "release", "runtime"]
Outcome = tuple[VerdictStatus, str]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    name: str
    scope: Scope
    doc: str

    def verdict(self, status: VerdictStatus, message: str = "") -> Verdict:
        return Verdict(check=self.id, status=status, message=message)


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What an artifact must be: its cell (None for `wheel inspect`) and the release's rules."""

    cell: Cell | None = None
    project: str | None = None
    requires_python: SpecifierSet | None = None
    managed: frozenset[str] = frozenset()
    size_limit: int | None = None
    namespaces: tuple[str, ...] = field(default=())


ArtifactCheck = Callable[[WheelFacts, Expectation], Outcome]
CHECKS: dict[str, CheckSpec] = {}
_ARTIFACT_CHECKS: list[tuple[CheckSpec, ArtifactCheck]] = []


def register(check_id: str, name: str, scope: Scope, doc: str) -> CheckSpec:
    assert check_id not in CHECKS, check_id
    CHECKS[check_id] = spec = CheckSpec(check_id, name, scope, doc)
    return spec


def _artifact(
    check_id: str, name: str, doc: str, *, needs_cell: bool = False
) -> Callable[[ArtifactCheck], ArtifactCheck]:
    spec = register(check_id, name, "cell" if needs_cell else "artifact", doc)

    def add(fn: ArtifactCheck) -> ArtifactCheck:
        _ARTIFACT_CHECKS.append((spec, fn))
        return fn

    return add


def check_artifact(facts: WheelFacts, expect: Expectation) -> list[Verdict]:
    """Run every static check on one wheel; checks that need a cell skip without one."""
    out = []
    for spec, fn in _ARTIFACT_CHECKS:
        if facts.error is not None and spec.id != "RF-V010":
            out.append(spec.verdict("skip", "the wheel could not be read"))
        elif spec.scope == "cell" and expect.cell is None:
            out.append(spec.verdict("skip", "no cell to compare with"))
        else:
            status, message = fn(facts, expect)
            out.append(spec.verdict(status, message))
    return out


def _cell(expect: Expectation) -> Cell:
    assert expect.cell is not None
    return expect.cell


# -- the wheel itself -------------------------------------------------------------------------


@_artifact("RF-V010", "wheel-readable", "The file is a zip with one .dist-info holding METADATA, "
           "WHEEL and RECORD.")  # fmt: skip
def _readable(facts: WheelFacts, expect: Expectation) -> Outcome:
    if facts.error is not None:
        return "fail", facts.error
    if facts.metadata_errors:
        return "fail", "; ".join(facts.metadata_errors)
    return "pass", f"{len(facts.members)} files"


@_artifact("RF-V011", "wheel-tags", "The WHEEL file's Tag lines are exactly the file name's tags.")
def _wheel_tags(facts: WheelFacts, expect: Expectation) -> Outcome:
    in_name, in_file = set(facts.tags), set(facts.wheel_tags)
    if in_name == in_file:
        return "pass", ", ".join(sorted(in_name))
    return "fail", (
        f"file name has {', '.join(sorted(in_name))} but WHEEL says "
        f"{', '.join(sorted(in_file)) or 'no Tag'}"
    )


@_artifact("RF-V030", "record-complete",
           "RECORD lists every file in the wheel, and every file it lists is there.")  # fmt: skip
def _record_complete(facts: WheelFacts, expect: Expectation) -> Outcome:
    listed = {row.path for row in facts.record}
    present = set(facts.members)
    unlisted = sorted(
        p
        for p in present - listed
        if p.rsplit("/", 1)[-1] not in UNRECORDED or ".dist-info/" not in p
    )
    missing = sorted(listed - present)
    problems = [f"not in RECORD: {p}" for p in unlisted] + [
        f"in RECORD, not in wheel: {p}" for p in missing
    ]
    if problems:
        return "fail", "; ".join(problems[:10]) + (
            f" (+{len(problems) - 10} more)" if len(problems) > 10 else ""
        )
    return "pass", f"{len(listed)} entries"


@_artifact("RF-V031", "record-hashes",
           "Every file's sha256 and size match its RECORD line.")  # fmt: skip
def _record_hashes(facts: WheelFacts, expect: Expectation) -> Outcome:
    if facts.digest_mismatches is None:
        return "skip", "hashes not verified (wheel inspect reads only what it needs)"
    if facts.digest_mismatches:
        found = facts.digest_mismatches
        return "fail", "; ".join(found[:5]) + (
            f" (+{len(found) - 5} more)" if len(found) > 5 else ""
        )
    return "pass", f"{sum(1 for r in facts.record if r.digest)} hashes match"


def _elf_skip(facts: WheelFacts) -> Outcome | None:
    if not facts.elves:
        return "skip", "no ELF files"
    return None


@_artifact("RF-V040", "symbol-versions",
           "Every ELF's GLIBC/GLIBCXX/CXXABI/GCC version needs fit the platform tag's policy "
           "(auditwheel's policy data).")  # fmt: skip
def _symbol_versions(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    found, checked = [], []
    for tag in facts.platform_tags:
        policy = policy_for_tag(tag)
        if policy is None:
            continue
        checked.append(policy.name)
        for elf in facts.elves:
            if elf.info is not None:
                found += [
                    f"{elf.path} needs {v} ({tag})"
                    for v in violations(policy, elf.info.version_needs)
                ]
    if not checked:
        return "skip", f"no symbol-version policy for {', '.join(facts.platform_tags)}"
    if found:
        return "fail", "; ".join(found[:8]) + (
            f" (+{len(found) - 8} more)" if len(found) > 8 else ""
        )
    return "pass", f"within {', '.join(sorted(set(checked)))}"


@_artifact("RF-V041", "external-libraries",
           "Every DT_NEEDED library is in the wheel, on the policy's allow-list, or shipped by a "
           "distribution in Requires-Dist.")  # fmt: skip
def _external_libraries(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    needed_by: dict[str, list[str]] = {}
    for lib, path in undeclared_libraries(facts):
        needed_by.setdefault(lib, []).append(path)
    problems = [
        f"{lib} (needed by {paths[0]}" + (f" and {len(paths) - 1} more)" if len(paths) > 1 else ")")
        for lib, paths in sorted(needed_by.items())
    ]
    if problems:
        return "fail", "not bundled, not allowed and not declared: " + "; ".join(problems[:8])
    return "pass", f"{len(external_libraries(facts))} external libraries, all allowed or declared"


@_artifact("RF-V043", "rpath",
           "No RPATH/RUNPATH entry points outside the wheel: each starts with "
           "$ORIGIN.")  # fmt: skip
def _rpath(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    found = []
    for elf in facts.elves:
        if elf.info is None:
            continue
        for kind, entries in (("RPATH", elf.info.rpath), ("RUNPATH", elf.info.runpath)):
            found += [
                f"{elf.path} {kind} {e!r}"
                for e in entries
                if e and not e.startswith(("$ORIGIN", "${ORIGIN}"))
            ]
    if found:
        return "fail", "; ".join(found[:8])
    return "pass", "only $ORIGIN-relative search paths"


@_artifact("RF-V044", "elf-readable",
           "Every ELF file parses and is built for the platform tag's architecture.")  # fmt: skip
def _elf_machine(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    arches = {a for a in (tag_arch(t) for t in facts.platform_tags) if a}
    found = []
    for elf in facts.elves:
        if elf.info is None:
            found.append(f"{elf.path}: {elf.error}")
        elif arches and elf.info.machine not in arches:
            found.append(
                f"{elf.path} is {elf.info.machine}, the tag says {', '.join(sorted(arches))}"
            )
    if found:
        return "fail", "; ".join(found[:8])
    return "pass", f"{len(facts.elves)} ELF files"


# -- against the cell -------------------------------------------------------------------------


@_artifact("RF-V012", "cell-tags", "The wheel's python, ABI and platform tags are the cell's.",
           needs_cell=True)  # fmt: skip
def _cell_tags(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = _cell(expect)
    want = {f"{cell.python_tag}-{cell.abi_tag}-{p}" for p in (cell.platform_tag or "").split(".")}
    if set(facts.tags) == want:
        return "pass", ", ".join(sorted(want))
    return (
        "fail",
        f"tags {', '.join(sorted(facts.tags))}, cell {cell.id} wants {', '.join(sorted(want))}",
    )


@_artifact("RF-V013", "version", "METADATA Name and Version are the project's and the cell's "
           "channel version (with its local suffix).", needs_cell=True)  # fmt: skip
def _version(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = _cell(expect)
    problems = []
    if expect.project and canonicalize_name(facts.metadata_name or "") != canonicalize_name(
        expect.project
    ):
        problems.append(f"Name is {facts.metadata_name!r}, the project is {expect.project!r}")
    if cell.version and facts.metadata_version != cell.version:
        problems.append(f"Version is {facts.metadata_version!r}, expected {cell.version!r}")
    if facts.metadata_version != facts.version:
        problems.append(f"file name says {facts.version!r}, METADATA {facts.metadata_version!r}")
    if problems:
        return "fail", "; ".join(problems)
    return "pass", f"{facts.metadata_name} {facts.metadata_version}"


def _same(a: Requirement, b: Requirement) -> bool:
    return (
        canonicalize_name(a.name) == canonicalize_name(b.name)
        and a.specifier == b.specifier
        and a.extras == b.extras
        and str(a.marker) == str(b.marker)
        and a.url == b.url
    )


@_artifact("RF-V020", "requires-dist",
           "Requires-Dist holds exactly the cell's extra install requirements and the runtime "
           "requirements of its dependency axes (names, pins, markers); other requirements "
           "may only name distributions no cell of the release pins.", needs_cell=True)  # fmt: skip
def _requires_dist(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = _cell(expect)
    wanted = [Requirement(t) for t in (*cell.extra_install_requires, *cell.axis_requires)]
    have = list(facts.requires_dist)
    problems = []
    for want in wanted:
        if any(_same(want, r) for r in have):
            continue
        named = [r for r in have if canonicalize_name(r.name) == canonicalize_name(want.name)]
        if named:
            problems.append(
                f"wrong pin: {'; '.join(str(r) for r in named)} — the cell wants {want}"
            )
        else:
            problems.append(f"missing: {want}")
    managed = expect.managed | {canonicalize_name(w.name) for w in wanted}
    for req in have:
        name = canonicalize_name(req.name)
        if name in managed and not any(name == canonicalize_name(w.name) for w in wanted):
            problems.append(f"unexpected: {req} (the cell pins no {req.name})")
    if problems:
        return "fail", "; ".join(problems)
    return "pass", f"{len(wanted)} cell requirements, {len(have) - len(wanted)} others"


@_artifact("RF-V021", "requires-python", "Requires-Python is the release's Python specifier.",
           needs_cell=True)  # fmt: skip
def _requires_python(facts: WheelFacts, expect: Expectation) -> Outcome:
    want = expect.requires_python
    if want is None:
        return "skip", "the release gives no Python specifier"
    if facts.requires_python == want:
        return "pass", str(want)
    return (
        "fail",
        f"Requires-Python is {facts.requires_python or 'missing'}, the release says {want}",
    )


@_artifact("RF-V042", "cxx11-abi",
           "A cell with the C++11 ABI has no old-ABI std::string/std::list symbols in the "
           "project's namespaces and does have std::__cxx11 ones (and the reverse).",
           needs_cell=True)  # fmt: skip
def _cxx11_abi(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    cell = _cell(expect)
    infos = [e.info for e in facts.elves if e.info is not None]
    new = [n for i in infos for n in i.cxx.cxx11_defined if in_namespaces(n, expect.namespaces)]
    old = [n for i in infos for n in i.cxx.pre_cxx11_defined if in_namespaces(n, expect.namespaces)]
    new_refs = sum(i.cxx.cxx11_references for i in infos)
    old_refs = sum(i.cxx.pre_cxx11_references for i in infos)
    if cell.cxx11_abi:
        wrong, right, wrong_refs, right_refs = old, new, old_refs, new_refs
    else:
        wrong, right, wrong_refs, right_refs = new, old, new_refs, old_refs
    abi = "C++11" if cell.cxx11_abi else "pre-C++11"
    if wrong:
        return (
            "fail",
            f"the cell builds with the {abi} ABI but {len(wrong)} symbols use the other one, "
            f"e.g. {wrong[0]}",
        )
    if not right and not right_refs and wrong_refs:
        return (
            "fail",
            f"the cell builds with the {abi} ABI but the code references only the other "
            "ABI's std::string",
        )
    if not (right or right_refs):
        return "pass", "no std::string/std::list in the dynamic symbols"
    return "pass", f"{abi}: {len(right)} symbols, {right_refs} references"


@_artifact("RF-V050", "size-limit", "The file fits the channel's size limit "
           "(project.size_limit_mb, PyPI's default 100 MB).", needs_cell=True)  # fmt: skip
def _size(facts: WheelFacts, expect: Expectation) -> Outcome:
    if expect.size_limit is None:
        return "skip", "no size limit"
    mb = facts.size / 1e6
    if facts.size > expect.size_limit:
        return "fail", f"{mb:.1f} MB is over the limit of {expect.size_limit / 1e6:.1f} MB"
    return "pass", f"{mb:.1f} MB of {expect.size_limit / 1e6:.1f} MB"


# -- shared with `wheel inspect` --------------------------------------------------------------


def bundled_names(facts: WheelFacts) -> set[str]:
    names = {e.path.rsplit("/", 1)[-1] for e in facts.elves}
    names |= {e.info.soname for e in facts.elves if e.info is not None and e.info.soname}
    return names


def external_libraries(facts: WheelFacts) -> dict[str, list[str]]:
    """DT_NEEDED libraries not in the wheel → the ELF files that need them."""
    inside = bundled_names(facts)
    out: dict[str, list[str]] = {}
    for elf in facts.elves:
        if elf.info is not None:
            for lib in elf.info.needed:
                if lib not in inside:
                    out.setdefault(lib, []).append(elf.path)
    return out


def classify_library(facts: WheelFacts, library: str) -> str:
    """`allowed` (policy allow-list or the dynamic loader), `driver`, `declared by
    <requirement>`, or `undeclared`."""
    if library.startswith(LOADER_PREFIXES):
        return "allowed"
    for tag in facts.platform_tags:
        policy = policy_for_tag(tag)
        if policy is not None and library in policy.libraries:
            return "allowed"
    if any(p == "@driver" for p in providers_of(library)):
        return "driver"
    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), "x86_64")
    requirement = declared_by(
        library, facts.requires_dist, linux_environment(arch, facts.python_tag)
    )
    if requirement is not None:
        return f"declared by {requirement}"
    return "undeclared"


def undeclared_libraries(facts: WheelFacts) -> Iterator[tuple[str, str]]:
    if not any(policy_for_tag(t) for t in facts.platform_tags):
        return
    for lib, paths in external_libraries(facts).items():
        if classify_library(facts, lib) == "undeclared":
            for path in paths:
                yield lib, path


# -- release-level and runtime checks (run by validate.py and runtime.py) ---------------------

MISSING = register("RF-V100", "artifact-present", "release",
                   "Each expected cell has an artifact with the expected file name.")  # fmt: skip
EXTRA = register("RF-V101", "no-extra-artifact", "release",
                 "No artifact belongs to no cell (a wrong name, tag or version).")  # fmt: skip
DUPLICATE = register("RF-V102", "one-artifact-per-cell", "release",
                     "No cell has two artifacts.")  # fmt: skip
PYPI_CONSISTENT = register("RF-V103", "pypi-consistent", "release",
                           "Wheels bound for PyPI share Requires-Dist, Requires-Python and "
                           "classifiers (PyPI shows one project page).")  # fmt: skip
INDEX_HASH = register("RF-V104", "index-hash", "release",
                      "The index links each file with a #sha256= that matches its "
                      "bytes.")  # fmt: skip
INSTALL = register("RF-R001", "installs", "runtime",
                   "pip installs the wheel into a fresh environment with the cell's "
                   "Python.")  # fmt: skip
SMOKE = register("RF-R002", "smoke", "runtime",
                 "The smoke command (project.build.smoke; default: import, print the version) "
                 "succeeds.")  # fmt: skip
BUILD_INFO = register("RF-R003", "build-info", "runtime",
                      "build_info() of the installed module agrees with the cell (variant, "
                      "C++11 ABI, accelerator).")  # fmt: skip
GPU = register("RF-R004", "gpu", "runtime",
               "On a machine with a GPU: the device is usable and build_info()'s CUDA version "
               "is the cell's.")  # fmt: skip
