"""What `upstream check` finds and `upstream update` writes: findings with their upstream source,
and the typed changes behind the findings that update can write into the matrix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from packaging.version import Version

from relforge.errors import Span
from relforge.matrix.source import Scalar

Kind = Literal[
    "axis-new",  # a newer series of an axis dependency, not built yet
    "axis-covered",  # the newest upstream version an axis value admits (information)
    "axis-gone",  # an axis value admits no version the index still offers
    "pin-changed",  # a pin differs from the upstream wheel's own METADATA
    "pin-yanked",  # a pinned version is yanked upstream
    "pin-gone",  # a pinned version (or its project) is not on the index
    "pin-conflict",  # an update of a pin would contradict another line (refused)
    "python-new",  # a CPython release the policy and the index now allow
    "python-waiting",  # a released CPython the axis dependencies ship no wheel for yet
    "python-eol",  # a CPython past end of life (RF-L001 on the policy date)
    "cuda-new",  # a CUDA minor newer than the release's (information)
    "metadata-skipped",  # an upstream wheel whose METADATA cannot be read (named, skipped)
]


@dataclass(frozen=True, kw_only=True)
class UpstreamSource:
    """Where upstream says it: the file, its sha256 as the index gives it, the METADATA line."""

    file: str
    sha256: str | None = None
    line: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256, "line": self.line}

    def describe(self) -> str:
        text = self.file + (f" (sha256 {self.sha256})" if self.sha256 else "")
        return text + (f": `{self.line}`" if self.line else "")


@dataclass(frozen=True, kw_only=True)
class AddAxisValue:
    """A new value of a dependency axis, written after `after` (the newest value)."""

    axis: str
    key: str
    after: str
    install: tuple[str, ...]
    requires: tuple[str, ...]
    index: str = ""


@dataclass(frozen=True, kw_only=True)
class FieldEdit:
    """A variant key that follows a pin (`cudnn:` for nvidia-cudnn-cu12, `nccl:` …)."""

    key: str
    node: Scalar
    new: str


@dataclass(frozen=True, kw_only=True)
class SetPin:
    """A pinned requirement whose version changes, written where the release itself has it."""

    node: Scalar
    old: str  # the requirement as written
    new: str  # the requirement with the new version
    follows: tuple[FieldEdit, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SetPythons:
    """The release's Python list after adding and dropping versions."""

    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


Change = AddAxisValue | SetPin | SetPythons


@dataclass(frozen=True, kw_only=True)
class UpstreamFinding:
    kind: Kind
    subject: str  # the distribution, axis or "Python 3.14"
    message: str
    due: bool  # a change of the matrix is due (exit 4 in `check`)
    where: Span | None = None  # the matrix line it concerns
    current: str = ""
    upstream: str = ""
    source: UpstreamSource | None = None
    change: Change | None = field(default=None, compare=False)
    manual: str = ""  # why `update` leaves it to a person (empty when it writes it)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "message": self.message,
            "due": self.due,
            "where": str(self.where) if self.where else None,
            "current": self.current or None,
            "upstream": self.upstream or None,
            "source": self.source.to_json() if self.source else None,
            "writes": self.change is not None,
            "manual": self.manual or None,
        }


def newest(versions: list[Version]) -> Version | None:
    return max(versions) if versions else None
