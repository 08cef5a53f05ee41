"""`relforge deps check`: for every wheel cell of a channel, pip resolves and would install the
project's wheel for that cell from the cell's folder index alone (`--isolated --index-url`,
the cell's platform and Python), served over HTTP from the store as a static server would.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from packaging.utils import parse_wheel_filename

from relforge.deps.resolve import RESOLVERS, pip_resolve
from relforge.deps.serve import serve_store
from relforge.deps.targets import Target, cell_wheel, wheel_targets
from relforge.errors import NothingToDoError, ValidationFailed
from relforge.matrix.schema import ChannelName, Matrix
from relforge.matrix.selector import Selector
from relforge.matrixstores import main_store

Echo = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class CellCheck:
    cell: str
    folder: str
    requirement: str  # project==version checked; empty when the cell has no wheel
    installs: tuple[str, ...] = ()  # name==version pip would install
    missing: tuple[str, ...] = ()
    error: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.requirement) and not self.missing and not self.error


@dataclass(frozen=True, kw_only=True)
class DepsCheckRequest:
    """What `relforge deps check` asks for: the selected wheel cells of `channel` of `matrix`
    (of `version` when given), each resolved from its folder index alone."""

    matrix: Matrix
    channel: ChannelName
    selectors: tuple[Selector, ...] = ()
    version: str | None = None


def check_channel(echo: Echo, request: DepsCheckRequest) -> list[CellCheck]:
    """Check every cell (`echo` says each as it is checked); raises ValidationFailed (exit 4)
    naming what is missing per cell."""
    matrix, channel = request.matrix, request.channel
    selectors, version = request.selectors, request.version
    targets = wheel_targets(matrix, channel, selectors)
    if not targets:
        raise NothingToDoError(f"the {channel} channel has no wheel cells", key="--channel")
    store = main_store(matrix)
    folders = sorted({t.folder for t in targets})
    listings = {
        f: [i for i in store.list(f + "/") if "/" not in i.key[len(f) + 1 :]] for f in folders
    }

    def one(target: Target, base: str) -> CellCheck:
        ours = cell_wheel(matrix, target, listings[target.folder], version)
        if ours is None:
            return CellCheck(cell=target.label, folder=target.folder, requirement="")
        name, wheel_version, _, _ = parse_wheel_filename(ours.key.rsplit("/", 1)[1])
        requirement = f"{name}=={wheel_version}"
        result = pip_resolve(target, [requirement], f"{base}/{target.folder}/")
        return CellCheck(
            cell=target.label,
            folder=target.folder,
            requirement=requirement,
            installs=tuple(f"{r.name}=={r.version}" for r in result.installs),
            missing=result.missing,
            error="" if result.ok or result.missing else result.error,
        )

    with serve_store(store, folders) as base, ThreadPoolExecutor(RESOLVERS) as pool:
        results = list(pool.map(lambda t: one(t, base), targets))
    for check in results:
        if not check.requirement:
            echo(f"  skip  {check.cell}: no {matrix.project.name} in {check.folder}/")
        elif check.ok:
            echo(f"  ok    {check.cell}: {check.requirement} → {len(check.installs)} wheel(s)")
        else:
            echo(f"  FAIL  {check.cell}: {check.requirement}: missing " + _what(check))
    checked = [r for r in results if r.requirement]
    if not checked:
        raise NothingToDoError(
            f"no folder of the {channel} channel in {store.url} holds a wheel of "
            f"{matrix.project.name} for any cell",
            key="--channel",
        )
    failed = [r for r in checked if not r.ok]
    lines = [f"{r.cell} ({r.folder}/): missing {_what(r)}" for r in failed]
    if failed:
        raise ValidationFailed(
            f"{len(failed)} of {len(checked)} cell(s) do not install from their channel index "
            "alone:\n  " + "\n  ".join(lines),
            key="--channel",
            hint=f"relforge deps mirror {matrix.file} --channel {channel} --upstream-index URL "
            "--execute",
        )
    return results


def check_summary(channel: ChannelName, results: list[CellCheck]) -> str:
    """The line a passing check ends with (and its step summary)."""
    checked = [r for r in results if r.requirement]
    line = f"deps check {channel}: {len(checked)} cell(s) install from the channel alone"
    if len(checked) < len(results):
        line += f", {len(results) - len(checked)} without a published wheel (not checked)"
    return line


def _what(check: CellCheck) -> str:
    return ", ".join(check.missing) or check.error or "(pip failed)"
