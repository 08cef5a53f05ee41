"""`relforge wheel inspect`: what one wheel is and needs, and whether it contradicts its tag."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename

from relforge.manifest import Verdict
from relforge.validate.checklist import CHECKS, Expectation, check_artifact
from relforge.validate.facts import WheelFacts, gather
from relforge.validate.from_index import dependencies_from_index
from relforge.validate.libraries import Need, resolve
from relforge.validate.macho import MachOSlice
from relforge.validate.providers import read_dependencies
from relforge.validate.tagpolicy import highest_versions, strictest_policy, tag_arch


@dataclass(frozen=True, kw_only=True)
class Inspection:
    facts: WheelFacts
    verdicts: tuple[Verdict, ...]
    needs_policy: str | None
    highest: dict[str, str]
    needs: tuple[Need, ...]
    abi: str

    @property
    def contradictions(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "fail")

    def externals(self) -> dict[str, dict[str, Any]]:
        """Libraries the loader does not find in the wheel: status (the worst of the files
        needing it), the files, where the loader finds it and notes."""
        out: dict[str, dict[str, Any]] = {}
        for need in self.needs:
            if need.status == "bundled":
                continue
            entry = out.setdefault(
                need.library, {"status": need.status, "needed_by": [], "found_at": None}
            )
            if not need.ok:
                entry["status"] = need.status
            entry["needed_by"].append(need.needed_by)
            entry["found_at"] = entry["found_at"] or need.found_at
            if need.note:
                entry.setdefault("notes", []).append(f"{need.needed_by}: {need.note}")
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        return {
            "file": f.file_name,
            "size": f.size,
            "name": f.metadata_name or f.name,
            "version": f.metadata_version or f.version,
            "tags": list(f.tags),
            "symbol_version_ceiling": self.needs_policy,
            "highest_versions": self.highest,
            "external_libraries": self.externals(),
            "cxx_abi": self.abi,
            "elf_files": [
                {"path": e.path, "size": e.size, "error": e.error}
                | (
                    {"soname": e.info.soname, "needed": list(e.info.needed), "abi": e.info.cxx.abi}
                    if e.info
                    else {}
                )
                | (
                    {"device_code": e.info.device.to_json()}
                    if e.info is not None and e.info.device is not None
                    else {}
                )
                for e in f.elves
            ],
            "macho_files": [
                {"path": m.path, "size": m.size, "error": m.error}
                | (
                    {"fat": m.info.fat, "slices": [_slice_json(p) for p in m.info.slices]}
                    if m.info
                    else {}
                )
                for m in f.machos
            ],
            "pe_files": [
                {"path": p.path, "size": p.size, "error": p.error}
                | (
                    {
                        "machine": p.info.machine,
                        "dll": p.info.dll,
                        "imports": list(p.info.imports),
                        "delay_imports": list(p.info.delay_imports),
                    }
                    if p.info
                    else {}
                )
                for p in f.pes
            ],
            "status": "fail" if self.contradictions else "pass",
            "verdicts": [
                {**v.to_json(), "name": CHECKS[v.check].name}
                for v in self.verdicts
                if CHECKS[v.check].scope == "artifact"
            ],
        }


def _slice_json(piece: MachOSlice) -> dict[str, Any]:
    """One architecture of a Mach-O file, as `delocate-listdeps` and `otool -L` show it."""
    return {
        "arch": piece.arch,
        "filetype": piece.filetype,
        "minos": piece.minos,
        "install_name": piece.install_name,
        "dylibs": [{"path": d.path, "kind": d.kind} for d in piece.dylibs],
        "rpaths": list(piece.rpaths),
        "signed": piece.signed,
    }


def inspect_wheel(
    path: Path, *, jobs: int = 2, dependencies: Sequence[Path] = (), index_url: str | None = None
) -> Inspection:
    """Read the wheel (ELF parts only, no RECORD hashing) and check it against itself and the
    dependency wheels at hand — given, or found in `index_url` — of which only the libraries
    the wheel loads are read; WheelError when a dependency wheel cannot be read."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        facts = gather(path, pool, verify_digests=False, symbols=True)
    needed = frozenset(n for e in facts.elves if e.info is not None for n in e.info.needed)
    deps = read_dependencies(dependencies, jobs=jobs, libraries=needed) if dependencies else ()
    if index_url is not None and facts.error is None:
        with tempfile.TemporaryDirectory(prefix="relforge-deps-") as tmp:
            given = {d.name for d in deps}
            found = [
                p
                for p in dependencies_from_index(index_url, facts, Path(tmp))
                if canonicalize_name(parse_wheel_filename(p.name)[0]) not in given
            ]
            deps += read_dependencies(found, jobs=jobs, libraries=needed, source=index_url)
    expect = Expectation(dependencies=deps)
    verdicts = tuple(v for v in check_artifact(facts, expect))
    infos = [e.info for e in facts.elves if e.info is not None]
    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), None)
    arch = arch or next((i.machine for i in infos), "x86_64")
    needs = [i.version_needs for i in infos]
    policy = strictest_policy(arch, needs) if infos else None
    abis = {i.cxx.abi for i in infos} - {"none"}
    abi = "none" if not abis else abis.pop() if len(abis) == 1 else "mixed"
    return Inspection(
        facts=facts,
        verdicts=verdicts,
        needs_policy=policy.name if policy else None,
        highest=highest_versions(needs),
        needs=tuple(resolve(facts, deps)),
        abi=abi,
    )
