"""How a build run is shown: live progress while cells build (under GitHub Actions, each cell's
log folded into the job log), then a summary table (cell, status, time, size, sha256), as JSON
for machines and as markdown for $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relforge.actions import fold, in_actions
from relforge.builders.executor import CellResult
from relforge.matrix.cell import Cell

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID
    from rich.table import Table

_STYLE = {"built": "green", "cached": "cyan", "failed": "bold red", "skipped": "yellow"}


def human_size(size: int | None) -> str:
    if size is None:
        return "—"
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def shown(path: Path) -> str:
    """A path as people read it: relative to the current directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def note(result: CellResult) -> str:
    if result.status in ("failed", "skipped"):
        where = f" (log: {shown(result.log)})" if result.status == "failed" and result.log else ""
        return result.reason + where
    return result.artifact.name if result.artifact else ""


class LineReporter:
    """One line per finished cell, for logs and pipes."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        self._builders: dict[str, str] = {}

    def started(self, cell: Cell, builder: str) -> None:
        with self._lock:
            self._builders[cell.id] = builder

    def finished(self, result: CellResult) -> None:
        with self._lock:
            self.done += 1
            builder = self._builders.get(result.cell.id)
            where = f" ({builder})" if builder else ""
            print(
                f"[{self.done}/{self.total}] {result.status:<7} {result.cell.id}{where}  "
                f"{result.seconds:.1f} s  {note(result)}",
                file=sys.stderr,
                flush=True,
            )
            if result.status in ("built", "failed"):
                fold_log(result)


def fold_log(result: CellResult) -> None:
    """Under GitHub Actions, the cell's whole log in a fold of the job log, so it is read where
    the build ran (the log file stays on the runner); nothing elsewhere."""
    if not in_actions() or result.log is None or not result.log.is_file():
        return
    text = result.log.read_text(encoding="utf-8", errors="replace")
    fold(f"{result.cell.id}: build log ({result.status})", text)


class LiveReporter:
    """A rich progress display: the overall bar and a spinner per running cell."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        from relforge.output import console

        self.progress: Progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console(stderr=True),
            transient=True,
        )
        self.overall = self.progress.add_task("cells", total=total)
        self.running: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> LiveReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, cell: Cell, builder: str) -> None:
        with self._lock:
            self.running[cell.id] = self.progress.add_task(f"{cell.id} ({builder})", total=None)

    def finished(self, result: CellResult) -> None:
        with self._lock:
            task = self.running.pop(result.cell.id, None)
            if task is not None:
                self.progress.remove_task(task)
            self.progress.advance(self.overall)
            style = _STYLE[result.status]
            self.progress.console.print(
                f"[{style}]{result.status:<7}[/] {result.cell.id}  {result.seconds:.1f} s  "
                f"{note(result)}",
                markup=True,
                highlight=False,
            )


def summary_table(results: list[CellResult]) -> Table:
    from rich.table import Table

    counts = {s: sum(r.status == s for r in results) for s in _STYLE}
    title = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    table = Table(title=f"{len(results)} cells: {title}", title_justify="left")
    for name in ("cell", "status", "builder", "time", "size", "sha256", "artifact / reason"):
        table.add_column(name, no_wrap=name != "artifact / reason")
    for r in results:
        table.add_row(
            r.cell.id,
            f"[{_STYLE[r.status]}]{r.status}[/]",
            r.builder,
            f"{r.seconds:.1f} s",
            human_size(r.size),
            (r.sha256 or "—")[:16],
            note(r),
        )
    return table


def results_json(
    results: list[CellResult], reasons: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The cells of a run for `--format json`; `builder_reason` says why `auto` chose."""
    return [
        {
            "cell": r.cell.id,
            "status": r.status,
            "builder": r.builder,
            "builder_reason": (reasons or {}).get(r.cell.id),
            "seconds": round(r.seconds, 3),
            "version": r.cell.version,
            "file": str(r.artifact) if r.artifact else None,
            "size": r.size,
            "sha256": r.sha256,
            "reason": r.reason or None,
            "log": str(r.log) if r.log else None,
        }
        for r in results
    ]


def summary_markdown(results: list[CellResult]) -> str:
    lines = [
        "### relforge build",
        "",
        "| Cell | Status | Time | Size | sha256 |",
        "|---|---|---:|---:|---|",
    ]
    for r in results:
        status = r.status if not r.reason else f"{r.status}: {r.reason}"
        lines.append(
            f"| `{r.cell.id}` | {status} | {r.seconds:.1f} s | {human_size(r.size)} | "
            f"`{(r.sha256 or '—')[:16]}` |"
        )
    return "\n".join(lines)
