"""`relforge upstream check`: one release of a matrix against an upstream index — its dependency
axes, the pins of its variants and runtime rules, and its Python list under the CPython policy —
as a report of findings, each saying whether a change of the matrix is due."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from relforge.errors import UsageError
from relforge.matrix.load import matrix_from_node
from relforge.matrix.schema import Matrix, Release
from relforge.matrix.source import Node, parse_yaml
from relforge.upstream.axisdrift import axis_distribution, check_axes
from relforge.upstream.index import UpstreamIndex
from relforge.upstream.model import UpstreamFinding
from relforge.upstream.pins import Compared, compare_pins, new_cuda, on_index
from relforge.upstream.python import check_pythons
from relforge.upstream.references import references
from relforge.upstream.sites import own_release, pin_sites

REPORT_VERSION = 1
# The order findings are listed in: what is due first, each group in file order.
_ORDER = (
    "pin-conflict",
    "axis-new",
    "pin-changed",
    "python-new",
    "python-eol",
    "axis-gone",
    "pin-yanked",
    "pin-gone",
    "metadata-skipped",
    "python-waiting",
    "cuda-new",
    "axis-covered",
)


@dataclass(frozen=True, kw_only=True)
class UpstreamReport:
    file: str
    release: str
    index: str
    policy_date: datetime.date
    findings: tuple[UpstreamFinding, ...]
    compared: tuple[Compared, ...] = field(default=())

    @property
    def due(self) -> list[UpstreamFinding]:
        return [f for f in self.findings if f.due]

    @property
    def refused(self) -> list[UpstreamFinding]:
        return [f for f in self.findings if f.kind == "pin-conflict"]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": REPORT_VERSION,
            "version": REPORT_VERSION,  # the key of the first reports, kept for their readers
            "file": self.file,
            "release": self.release,
            "index": self.index,
            "policy_date": self.policy_date.isoformat(),
            "due": len(self.due),
            "findings": [f.to_json() for f in self.findings],
            "compared": [c.to_json() for c in self.compared],
        }


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """A matrix as text, located nodes and the checked Matrix (one read for check and update)."""

    file: str
    text: str
    root: Node
    matrix: Matrix

    @classmethod
    def parse(cls, file: str, text: str) -> Loaded:
        root = parse_yaml(text, file)
        return cls(file=file, text=text, root=root, matrix=matrix_from_node(root, file))


def pick_release(matrix: Matrix, given: str | None) -> Release:
    """The release asked for, else the newest one in the file."""
    if given is not None:
        return matrix.release(given)
    if not matrix.releases:
        raise UsageError(f"{matrix.file} has no release", key="--release")
    return matrix.releases[max(matrix.releases, key=Version)]


@dataclass(frozen=True, kw_only=True)
class UpstreamRequest:
    """What `relforge upstream check` asks for: `release` (default: the newest) of the loaded
    matrix, judged as of `today` (default: the date today)."""

    loaded: Loaded
    release: str | None = None
    today: datetime.date | None = None


def check_upstream(index: UpstreamIndex, request: UpstreamRequest) -> UpstreamReport:
    """Everything upstream asks of one release (reads the index only)."""
    loaded = request.loaded
    matrix = loaded.matrix
    rel = pick_release(matrix, request.release)
    today = request.today or datetime.date.today()
    policy_date = rel.date or today
    own = own_release(loaded.root, rel.name)
    sites = pin_sites(matrix, rel, own)
    dists = [axis_distribution(a, v) for a, v in rel.axes.items()]
    index.prefetch([*dists, *([] if rel.axes else [matrix.project.name]), *(s.name for s in sites)])
    findings: list[UpstreamFinding] = []
    axes = check_axes(rel, own, index)
    for result in axes.values():
        findings += result.findings
    # The wheels whose pins the release follows: with axes, the versions they build with (an
    # extension's nvidia-* pins are its torch's); without, the project's own published release
    # (PyTorch's matrix against PyPI's torch of that version).
    followed = [r.builds_with for r in axes.values()]
    ours = None if rel.axes else index.project(matrix.project.name)
    if ours is not None and rel.full_version in ours.versions:
        followed.append([ours.versions[rel.full_version]])
    refs, skipped = references(rel, followed, index, sites)
    pinned, compared = compare_pins(rel, own, sites, refs)
    findings += pinned + skipped
    findings += on_index(sites, index)
    findings += new_cuda(rel, sites, index)
    by_axis = {d: r.builds_with for d, r in zip(dists, axes.values(), strict=True)}
    findings += check_pythons(rel, policy_date, today, by_axis)
    return UpstreamReport(
        file=loaded.file,
        release=rel.name,
        index=index.url,
        policy_date=policy_date,
        findings=tuple(_ordered(findings)),
        compared=tuple(compared),
    )


def _ordered(findings: Sequence[UpstreamFinding]) -> list[UpstreamFinding]:
    rank = {kind: n for n, kind in enumerate(_ORDER)}
    return sorted(findings, key=lambda f: rank[f.kind])  # stable: file order within a kind
