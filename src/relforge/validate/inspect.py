"""`relforge wheel inspect`: what one wheel is and needs, and whether it contradicts its tag."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.manifest import Verdict
from relforge.validate.checks import (
    CHECKS,
    Expectation,
    check_artifact,
    classify_library,
    external_libraries,
)
from relforge.validate.facts import WheelFacts, gather
from relforge.validate.policy import highest_versions, strictest_policy, tag_arch


@dataclass(frozen=True, kw_only=True)
class Inspection:
    facts: WheelFacts
    verdicts: tuple[Verdict, ...]
    needs_policy: str | None
    highest: dict[str, str]
    externals: dict[str, tuple[str, tuple[str, ...]]]
    abi: str

    @property
    def contradictions(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.status == "fail")

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
            "external_libraries": {
                lib: {"status": status, "needed_by": list(paths)}
                for lib, (status, paths) in sorted(self.externals.items())
            },
            "cxx_abi": self.abi,
            "elf_files": [
                {"path": e.path, "size": e.size, "error": e.error}
                | (
                    {"soname": e.info.soname, "needed": list(e.info.needed), "abi": e.info.cxx.abi}
                    if e.info
                    else {}
                )
                for e in f.elves
            ],
            "status": "fail" if self.contradictions else "pass",
            "verdicts": [
                {**v.to_json(), "name": CHECKS[v.check].name}
                for v in self.verdicts
                if CHECKS[v.check].scope == "artifact"
            ],
        }


def inspect_wheel(path: Path, *, jobs: int = 2) -> Inspection:
    """Read the wheel (ELF parts only, no RECORD hashing) and check it against itself."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        facts = gather(path, pool, verify_digests=False)
    verdicts = tuple(v for v in check_artifact(facts, Expectation()))
    infos = [e.info for e in facts.elves if e.info is not None]
    arch = next((a for a in (tag_arch(t) for t in facts.platform_tags) if a), None)
    arch = arch or next((i.machine for i in infos), "x86_64")
    needs = [i.version_needs for i in infos]
    policy = strictest_policy(arch, needs) if infos else None
    externals = {
        lib: (classify_library(facts, lib), tuple(paths))
        for lib, paths in external_libraries(facts).items()
    }
    abis = {i.cxx.abi for i in infos} - {"none"}
    abi = "none" if not abis else abis.pop() if len(abis) == 1 else "mixed"
    return Inspection(
        facts=facts,
        verdicts=verdicts,
        needs_policy=policy.name if policy else None,
        highest=highest_versions(needs),
        externals=externals,
        abi=abi,
    )
