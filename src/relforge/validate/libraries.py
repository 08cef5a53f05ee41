"""Where each DT_NEEDED library comes from, as the dynamic loader finds it (RF-V041).

A library is *bundled* only when the loader reaches it: glibc looks in the needing file's
DT_RUNPATH, or, when it has none, in its DT_RPATH and the DT_RPATHs of the files that loaded
it; `$ORIGIN` is the needing file's directory.  Past those it searches only the system path.
A file of that name elsewhere in the wheel does not count.  Libraries not reached in the wheel
must be on the allow-list of *every* policy tag of the wheel, belong to the GPU driver, or be
shipped by a distribution Requires-Dist names: by the dependency's wheel when it is at hand
(`--with`), else by the catalogue of relforge.providedlibs (resources/library_providers.yaml).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from relforge.providedlibs import DRIVER, applies, declared_by, linux_environment, providers_of
from relforge.validate.checkregistry import Expectation, Outcome, artifact
from relforge.validate.facts import ElfMember, WheelFacts
from relforge.validate.providers import DependencyWheel, site_path
from relforge.validate.tagpolicy import LOADER_PREFIXES, Policy, policy_for_tag, tag_arch

_ORIGIN = ("$ORIGIN", "${ORIGIN}")


@dataclass(frozen=True, kw_only=True)
class Need:
    """One DT_NEEDED entry of one ELF file and how it is satisfied."""

    library: str
    needed_by: str
    status: str  # bundled | allowed | driver | declared by … | undeclared
    found_at: str | None = None  # site-packages path of the file the loader finds
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "undeclared"


def loaders_of(facts: WheelFacts) -> dict[str, list[ElfMember]]:
    """Library name → the wheel's ELF files that need it."""
    out: dict[str, list[ElfMember]] = {}
    for elf in facts.elves:
        if elf.info is not None:
            for name in elf.info.needed:
                out.setdefault(name, []).append(elf)
    return out


def search_dirs(
    facts: WheelFacts, elf: ElfMember, loaders: dict[str, list[ElfMember]] | None = None
) -> list[str]:
    """The directories (site-packages relative) the loader searches for `elf`'s needs, in order;
    entries outside the wheel's tree (absolute, $LIB, $PLATFORM) are left out."""
    loaders = loaders_of(facts) if loaders is None else loaders
    entries: list[tuple[ElfMember, str]] = []
    info = elf.info
    if info is None:
        return []
    if info.runpath:
        entries = [(elf, e) for e in info.runpath]
    else:
        # DT_RPATH of the file, then of the files that (transitively) loaded it
        seen = {elf.path}
        chain = [elf]
        while chain:
            current = chain.pop(0)
            if current.info is None or current.info.runpath:
                continue
            entries += [(current, e) for e in current.info.rpath]
            names = {posixpath.basename(current.path), current.info.soname}
            for name in names:
                for parent in loaders.get(name or "", []):
                    if parent.path not in seen:
                        seen.add(parent.path)
                        chain.append(parent)
    dirs = []
    for owner, entry in entries:
        expanded = _expand(entry, posixpath.dirname(site_path(owner.path)))
        if expanded is not None and expanded not in dirs:
            dirs.append(expanded)
    return dirs


def _expand(entry: str, origin: str) -> str | None:
    for token in _ORIGIN:
        if entry.startswith(token):
            rest = entry[len(token) :]
            return posixpath.normpath(posixpath.join(origin or ".", "./" + rest.lstrip("/")))
    return None


def _by_file_name(facts: WheelFacts) -> dict[str, list[ElfMember]]:
    out: dict[str, list[ElfMember]] = {}
    for elf in facts.elves:
        out.setdefault(posixpath.basename(elf.path), []).append(elf)
    return out


def _show(dirs: Sequence[str]) -> str:
    return ", ".join(f"{d}/" if d != "." else "./" for d in dirs) or "no directory in the wheel"


def resolve(facts: WheelFacts, dependencies: Sequence[DependencyWheel] = ()) -> list[Need]:
    """Every (library, needing file) pair of the wheel's ELF files with its status."""
    own = {site_path(e.path): e for e in facts.elves}
    by_name = _by_file_name(facts)
    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), "x86_64")
    environment = linux_environment(arch, facts.python_tag)
    policies = [p for p in (policy_for_tag(t) for t in facts.platform_tags) if p is not None]
    at_hand = {d.name: d for d in dependencies}
    declared_deps = [
        at_hand[canonicalize_name(r.name)]
        for r in facts.requires_dist
        if canonicalize_name(r.name) in at_hand and applies(r, environment)
    ]
    out = []
    loaders = loaders_of(facts)
    for elf in facts.elves:
        if elf.info is None:
            continue
        dirs = search_dirs(facts, elf, loaders)
        for library in elf.info.needed:
            candidates = [posixpath.normpath(posixpath.join(d, library)) for d in dirs]
            found = next((c for c in candidates if c in own), None)
            if found is not None:
                out.append(
                    Need(library=library, needed_by=elf.path, status="bundled", found_at=found)
                )
                continue
            out.append(
                _external(
                    facts, elf.path, library, dirs, candidates, by_name, policies,
                    environment, dependencies, declared_deps,
                )
            )  # fmt: skip
    return out


def _external(
    facts: WheelFacts,
    path: str,
    library: str,
    dirs: Sequence[str],
    candidates: Sequence[str],
    by_name: dict[str, list[ElfMember]],
    policies: Sequence[Policy],
    environment: dict[str, str],
    dependencies: Sequence[DependencyWheel],
    declared_deps: Sequence[DependencyWheel],
) -> Need:
    elsewhere = [e.path for e in by_name.get(library, [])]
    unreached = (
        f"bundled as {elsewhere[0]} but not on {path}'s search path ({_show(dirs)}, then the "
        "system path)"
        if elsewhere
        else ""
    )

    def need(status: str, found_at: str | None = None, note: str = unreached) -> Need:
        return Need(library=library, needed_by=path, status=status, found_at=found_at, note=note)

    if library.startswith(LOADER_PREFIXES):
        return need("allowed")
    if policies and all(library in p.libraries for p in policies):
        return need("allowed")
    if DRIVER in providers_of(library):
        return need("driver")
    for dep in declared_deps:
        reached = next((c for c in candidates if c in dep.elves_by_site_path), None)
        if reached is not None:
            return need(f"declared by {dep.name} ({dep.label}, {dep.source})", reached, "")
        shipped = dep.elves_by_file_name.get(library)
        if shipped:
            note = (
                f"{dep.label} ships {shipped[0].path}, outside {path}'s search path: it works "
                f"only once {dep.name} has loaded it"
            )
            return need(
                f"declared by {dep.name} ({dep.label}, {dep.source})", shipped[0].path, note
            )
    # the catalogue, for requirements whose wheel is not at hand (cuda-toolkit[cupti] brings
    # nvidia-cuda-cupti: a --with wheel of the latter is then a transitive dependency)
    at_hand = {d.name for d in declared_deps}
    requirements = [r for r in facts.requires_dist if canonicalize_name(r.name) not in at_hand]
    requirement = declared_by(library, requirements, environment)
    if requirement is not None:
        return need(f"declared by {requirement}")
    for dep in dependencies:
        if dep not in declared_deps and library in dep.elves_by_file_name:
            note = f"shipped by {dep.label} ({dep.source}), which Requires-Dist does not name"
            return need("undeclared", None, note + (f"; {unreached}" if unreached else ""))
    guessed = [
        f"{d.label} ({d.source})"
        for d in declared_deps
        if any(provides(p, d.name) for p in providers_of(library))
    ]
    if guessed:
        return need("undeclared", None, f"{', '.join(guessed)} ships no {library}")
    return need("undeclared")


def provides(provider: str, name: str) -> bool:
    """Whether a catalogue entry (`dist` or `dist[extra]`) names the distribution `name`."""
    return canonicalize_name(provider.partition("[")[0]) == name


def external_libraries(facts: WheelFacts, needs: Sequence[Need]) -> dict[str, list[str]]:
    """Libraries the loader does not find in the wheel → the ELF files that need them."""
    out: dict[str, list[str]] = {}
    for need in needs:
        if need.status != "bundled":
            out.setdefault(need.library, []).append(need.needed_by)
    return out


def problems(needs: Sequence[Need]) -> Iterator[str]:
    """One line per undeclared library: the files that need it and where the loader looks."""
    grouped: dict[str, list[Need]] = {}
    for need in needs:
        if not need.ok:
            grouped.setdefault(need.library, []).append(need)
    for library, group in sorted(grouped.items()):
        first = group[0]
        more = f" and {len(group) - 1} more" if len(group) > 1 else ""
        yield f"{library} (needed by {first.needed_by}{more}" + (
            f"; {first.note})" if first.note else ")"
        )


@artifact("RF-V041", "external-libraries",
          "Every DT_NEEDED library is reached through the needing file's RPATH/RUNPATH in the "
          "wheel, is on the allow-list of every policy tag, or is shipped by a distribution in "
          "Requires-Dist (its wheel's file list with --with).")  # fmt: skip
def _external_libraries(facts: WheelFacts, expect: Expectation) -> Outcome:
    if not facts.elves:
        return "skip", "no ELF files"
    if not any(policy_for_tag(t) for t in facts.platform_tags):
        return "skip", f"no library policy for {', '.join(facts.platform_tags)}"
    needs = resolve(facts, expect.dependencies)
    found = list(problems(needs))
    if found:
        return "fail", "not reachable in the wheel, not allowed and not declared: " + "; ".join(
            found[:8]
        ) + (f" (+{len(found) - 8} more)" if len(found) > 8 else "")
    externals = external_libraries(facts, needs)
    return "pass", f"{len(externals)} external libraries, all allowed or declared"
