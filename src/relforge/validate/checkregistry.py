"""The check registry: every check has a stable ID, a name and a one-line doc, like a linter's.

RF-V0xx are static checks of one wheel (some need its cell, some only the wheel itself),
RF-V1xx look at the whole set of artifacts, RF-R0xx install and run a wheel (runtime.py).
The checks themselves live in the modules that checklist.CHECK_MODULES lists (checks.py,
members.py, libraries.py, abi.py, …; a native archive's own in archivechecks.py): whatever runs
or lists checks takes CHECKS and check_artifact from relforge.validate.checklist, which
imports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from packaging.specifiers import SpecifierSet

from relforge.manifest import Verdict, VerdictStatus
from relforge.validate.facts import WheelFacts
from relforge.validate.providers import DependencyWheel

if TYPE_CHECKING:  # the matrix package costs 0.35 s to import; `wheel inspect` needs no cell
    from relforge.matrix.cell import Cell

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
    dependencies: tuple[DependencyWheel, ...] = field(default=())  # `--with WHEEL`
    linked: bool = False  # shared objects are linked by programs (a native archive's): no plugins


ArtifactCheck = Callable[[WheelFacts, Expectation], Outcome]
CHECKS: dict[str, CheckSpec] = {}
_ARTIFACT_CHECKS: list[tuple[CheckSpec, ArtifactCheck]] = []


def check_name(check_id: str) -> str:
    """The registered name of a check ID; "" for an ID the registry does not know (a verdict
    read from an older or foreign manifest)."""
    spec = CHECKS.get(check_id)
    return spec.name if spec is not None else ""


def register(check_id: str, name: str, scope: Scope, doc: str) -> CheckSpec:
    assert check_id not in CHECKS, check_id
    CHECKS[check_id] = spec = CheckSpec(check_id, name, scope, doc)
    return spec


def artifact(
    check_id: str, name: str, doc: str, *, needs_cell: bool = False
) -> Callable[[ArtifactCheck], ArtifactCheck]:
    spec = register(check_id, name, "cell" if needs_cell else "artifact", doc)

    def add(fn: ArtifactCheck) -> ArtifactCheck:
        _ARTIFACT_CHECKS.append((spec, fn))
        return fn

    return add


def check_artifact(
    facts: WheelFacts, expect: Expectation, *, only: Collection[str] | None = None
) -> list[Verdict]:
    """Run every static check (`only`: these IDs) on one wheel; checks that need a cell skip
    without one."""
    out = []
    for spec, fn in _ARTIFACT_CHECKS:
        if only is not None and spec.id not in only:
            continue
        if facts.error is not None and spec.id != "RF-V010":
            out.append(spec.verdict("skip", "the wheel could not be read"))
        elif spec.scope == "cell" and expect.cell is None:
            out.append(spec.verdict("skip", "no cell to compare with"))
        else:
            status, message = fn(facts, expect)
            out.append(spec.verdict(status, message))
    return out


def cell_of(expect: Expectation) -> Cell:
    assert expect.cell is not None
    return expect.cell
