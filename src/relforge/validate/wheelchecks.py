"""The checks of one wheel's metadata, RECORD, symbol versions, RPATHs, ELF machines and cell;
the release-level and runtime check IDs.  The registry itself is registry.py."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from relforge.matrix.wheeltags import cell_tags, tag_mismatch
from relforge.validate.checkregistry import (
    CHECKS,
    Expectation,
    Outcome,
    artifact,
    cell_of,
    check_artifact,
    register,
)
from relforge.validate.cxxabi import in_namespaces
from relforge.validate.facts import UNRECORDED, WheelFacts
from relforge.validate.tagpolicy import policy_for_tag, tag_arch, violations

__all__ = ["CHECKS", "Expectation", "check_artifact"]

# -- the wheel itself -------------------------------------------------------------------------


@artifact("RF-V010", "wheel-readable", "The file is a zip with one .dist-info holding METADATA, "
           "WHEEL and RECORD.")  # fmt: skip
def _readable(facts: WheelFacts, expect: Expectation) -> Outcome:
    if facts.error is not None:
        return "fail", facts.error
    if facts.metadata_errors:
        return "fail", "; ".join(facts.metadata_errors)
    return "pass", f"{len(facts.members)} files"


@artifact("RF-V011", "wheel-tags", "The WHEEL file's Tag lines are exactly the file name's tags.")
def _wheel_tags(facts: WheelFacts, expect: Expectation) -> Outcome:
    in_name, in_file = set(facts.tags), set(facts.wheel_tags)
    if in_name == in_file:
        return "pass", ", ".join(sorted(in_name))
    return "fail", (
        f"file name has {', '.join(sorted(in_name))} but WHEEL says "
        f"{', '.join(sorted(in_file)) or 'no Tag'}"
    )


@artifact("RF-V030", "record-complete",
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


@artifact("RF-V031", "record-hashes",
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


@artifact("RF-V040", "symbol-versions",
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


RPATH_CHECK = "RF-V043"


@artifact(RPATH_CHECK, "rpath",
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


@artifact("RF-V044", "elf-readable",
           "Every ELF file parses and is built for the architecture of every platform "
           "tag.")  # fmt: skip
def _elf_machine(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    arches = {a for a in (tag_arch(t) for t in facts.platform_tags) if a}
    found = []
    for elf in facts.elves:
        if elf.info is None:
            found.append(f"{elf.path}: {elf.error}")
        elif arches and arches != {elf.info.machine}:
            found.append(
                f"{elf.path} is {elf.info.machine}, the tags say {', '.join(sorted(arches))}"
            )
    if found:
        return "fail", "; ".join(found[:8])
    return "pass", f"{len(facts.elves)} ELF files"


# -- against the cell -------------------------------------------------------------------------


@artifact("RF-V012", "cell-tags", "The wheel's python, ABI and platform tags are the cell's.",
           needs_cell=True)  # fmt: skip
def _cell_tags(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = cell_of(expect)
    differ = tag_mismatch(cell, facts.tags)
    if differ is None:
        return "pass", ", ".join(sorted(cell_tags(cell)))
    return "fail", f"tags {differ.got}, cell {cell.id} wants {differ.want}: {differ.fix}"


@artifact("RF-V013", "version", "METADATA Name and Version are the project's and the cell's "
           "channel version (with its local suffix).", needs_cell=True)  # fmt: skip
def _version(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = cell_of(expect)
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


@artifact("RF-V020", "requires-dist",
           "Requires-Dist holds exactly the cell's extra install requirements and the runtime "
           "requirements of its dependency axes (names, pins, markers); other requirements "
           "may only name distributions no cell of the release pins.", needs_cell=True)  # fmt: skip
def _requires_dist(facts: WheelFacts, expect: Expectation) -> Outcome:
    cell = cell_of(expect)
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


@artifact("RF-V021", "requires-python", "Requires-Python is the release's Python specifier.",
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


@artifact("RF-V042", "cxx11-abi",
           "A cell with the C++11 ABI has no old-ABI std::string/std::list symbols in the "
           "project's namespaces and does have std::__cxx11 ones (and the reverse).",
           needs_cell=True)  # fmt: skip
def _cxx11_abi(facts: WheelFacts, expect: Expectation) -> Outcome:
    skip = _elf_skip(facts)
    if skip:
        return skip
    cell = cell_of(expect)
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


@artifact("RF-V050", "size-limit", "The file fits the channel's size limit "
           "(project.size_limit_mb, PyPI's default 100 MB).", needs_cell=True)  # fmt: skip
def _size(facts: WheelFacts, expect: Expectation) -> Outcome:
    if expect.size_limit is None:
        return "skip", "no size limit"
    mb = facts.size / 1e6
    if facts.size > expect.size_limit:
        return "fail", f"{mb:.1f} MB is over the limit of {expect.size_limit / 1e6:.1f} MB"
    return "pass", f"{mb:.1f} MB of {expect.size_limit / 1e6:.1f} MB"


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
                   "pip installs the wheel into a fresh environment with each Python it serves; "
                   "its dependencies come from an index (--runtime-index, the one validated or "
                   "the channel's mirrored closure) and its dependency axes' wheels (fetched for "
                   "each of those Pythons); a warning names those left out (no source given, or "
                   "the source lacks them) and the fix.")  # fmt: skip
SMOKE = register("RF-R002", "smoke", "runtime",
                 "The smoke command (project.build.smoke; default: import the module, "
                 "project.import_name) succeeds; when it fails on a module of a dependency "
                 "RF-R001 left out, its message says so.")  # fmt: skip
BUILD_INFO = register("RF-R003", "build-info", "runtime",
                      "build_info() of the installed module agrees with the cell (variant, "
                      "C++11 ABI, accelerator).")  # fmt: skip
GPU = register("RF-R004", "gpu", "runtime",
               "On a machine with NVIDIA GPUs (nvidia-smi): before anything runs, every GPU's "
               "compute capability can run the artifact's device code (SASS of its major and a "
               "minor not above it, or PTX not above it) and its driver is new enough for the "
               "cell's CUDA version; build_info() agrees.")  # fmt: skip
GPU_SMOKE = register("RF-R006", "gpu-smoke", "runtime",
                     "On a machine with a GPU: the GPU smoke command (project.build.gpu_smoke) "
                     "runs a kernel in the fresh environment and exits 0 within its timeout; "
                     "the GPUs it ran on are recorded as proven.")  # fmt: skip
