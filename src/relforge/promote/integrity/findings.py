"""What `relforge verify` reports: findings per store, in a shape people and machines read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from relforge.stores.content import Content

FindingKind = Literal["missing", "extra", "drifted", "sidecar", "page", "parity", "unfinished"]
KINDS: tuple[FindingKind, ...] = (
    "missing",
    "extra",
    "drifted",
    "sidecar",
    "page",
    "parity",
    "unfinished",
)


@dataclass(frozen=True, kw_only=True)
class IntegrityFinding:
    kind: FindingKind
    store: str  # the store's name: main or a mirror's
    key: str
    message: str
    expected_sha256: str | None = None
    found_sha256: str | None = None
    cell_id: str | None = None
    folder: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "store": self.store,
            "key": self.key,
            "message": self.message,
            "expected_sha256": self.expected_sha256,
            "found_sha256": self.found_sha256,
            "cell_id": self.cell_id,
        }


@dataclass(frozen=True, kw_only=True)
class StoreReport:
    name: str
    url: str
    findings: tuple[IntegrityFinding, ...]
    objects_checked: int
    pages_checked: int
    observed: dict[str, Content] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, kw_only=True)
class IntegrityReport:
    channel: str
    stores: tuple[StoreReport, ...]

    @property
    def findings(self) -> list[IntegrityFinding]:
        return [f for s in self.stores for f in s.findings]

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "stores": [
                {
                    "name": s.name,
                    "url": s.url,
                    "objects_checked": s.objects_checked,
                    "pages_checked": s.pages_checked,
                    "findings": len(s.findings),
                }
                for s in self.stores
            ],
            "findings": [f.to_json() for f in self.findings],
            "clean": not self.findings,
        }
