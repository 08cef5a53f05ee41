"""How a build run is shown: live progress while cells build (under GitHub Actions, each cell's
log folded into the job log), then a summary table (cell, status, time, size, sha256), as JSON
for machines and as markdown for $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relforge.actions import fold, in_actions
from relforge.builders.control import error_line
from relforge.builders.executor import CellResult
from relforge.matrix.cell import Cell

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

SHOWN_FAILURES = 5  # failed cells whose error line the final message shows
HEARTBEAT_S = 60.0  # a `still …` line this often while one step of a cell goes on
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
    """Lines for logs and pipes (stderr): one when a cell enters a step of its build
    (`[2/9] CELL: pip wheel (45 s)`: the cell's number in start order, the plan's total, the
    seconds since the cell started), one every `heartbeat_s` while a step goes on (`[2/9] CELL:
    still pip wheel, 2 min`), and one when a cell finishes (`[3/9] built …`: cells done so far).
    Use it as a context manager: the heartbeat is a thread of its own."""

    def __init__(
        self,
        total: int,
        *,
        heartbeat_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.total = total
        self.done = 0
        self.heartbeat_s = heartbeat_s
        self._clock = clock
        self._say = say or _stderr
        self._lock = threading.Lock()
        self._builders: dict[str, str] = {}
        self._running: dict[str, _Running] = {}
        self._started = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> LineReporter:
        self._ticker = threading.Thread(target=self._beat, name="relforge-heartbeat", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()

    def started(self, cell: Cell, builder: str) -> None:
        with self._lock:
            self._builders[cell.id] = builder
            self._started += 1
            now = self._clock()
            self._running[cell.id] = _Running(number=self._started, start=now)

    def phase(self, cell: Cell, name: str) -> None:
        with self._lock:
            running = self._running.get(cell.id)
            if running is None:
                return
            now = self._clock()
            running.enter(name, now)
            self._say(
                f"[{running.number}/{self.total}] {cell.id}: {name} ({now - running.start:.0f} s)"
            )

    def tick(self) -> None:
        """A `still …` line for each step that has gone on `heartbeat_s` since its last line."""
        with self._lock:
            now = self._clock()
            for cell_id, running in self._running.items():
                if running.phase and now - running.said >= self.heartbeat_s:
                    running.said = now
                    self._say(
                        f"[{running.number}/{self.total}] {cell_id}: still {running.phase}, "
                        f"{minutes(now - running.since)}"
                    )

    def _beat(self) -> None:
        while not self._stop.wait(min(self.heartbeat_s / 4, 5.0)):
            self.tick()

    def finished(self, result: CellResult) -> None:
        with self._lock:
            self._running.pop(result.cell.id, None)
            self.done += 1
            builder = self._builders.get(result.cell.id)
            where = f" ({builder})" if builder else ""
            self._say(
                f"[{self.done}/{self.total}] {result.status:<7} {result.cell.id}{where}  "
                f"{result.seconds:.1f} s  {note(result)}"
            )
            if result.status in ("built", "failed"):
                fold_log(result)


@dataclass
class _Running:
    """A building cell as the line reporter follows it."""

    number: int  # in start order
    start: float
    phase: str = ""
    since: float = 0.0  # when the phase began
    said: float = 0.0  # when its last line was printed

    def enter(self, name: str, now: float) -> None:
        self.phase, self.since, self.said = name, now, now


def minutes(seconds: float) -> str:
    """`1 min`, `12 min`: how long a step has gone on, in whole minutes (at least 1)."""
    return f"{max(int(seconds // 60), 1)} min"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def fold_log(result: CellResult) -> None:
    """Under GitHub Actions, the cell's whole log in a fold of the job log, so it is read where
    the build ran (the log file stays on the runner); nothing elsewhere."""
    if not in_actions() or result.log is None or not result.log.is_file():
        return
    text = result.log.read_text(encoding="utf-8", errors="replace")
    fold(f"{result.cell.id}: build log ({result.status})", text)


class LiveReporter:
    """A rich progress display: `done/total` cells from the start (the plan knows the total),
    and a row per running cell naming the step it is in."""

    def __init__(self, total: int, console: Console | None = None) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from relforge.output import console as make_console

        self.total = total
        self.progress: Progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            console=console or make_console(stderr=True),
            transient=True,
        )
        self.overall = self.progress.add_task("cells", total=total, count=f"0/{total}")
        self.done = 0
        self.running: dict[str, TaskID] = {}
        self._labels: dict[str, str] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> LiveReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, cell: Cell, builder: str) -> None:
        with self._lock:
            self._labels[cell.id] = f"{cell.id} ({builder})"
            self.running[cell.id] = self.progress.add_task(
                self._labels[cell.id], total=None, count=""
            )

    def phase(self, cell: Cell, name: str) -> None:
        with self._lock:
            task = self.running.get(cell.id)
            if task is not None:
                self.progress.update(task, description=f"{self._labels[cell.id]}: {name}")

    def finished(self, result: CellResult) -> None:
        with self._lock:
            task = self.running.pop(result.cell.id, None)
            if task is not None:
                self.progress.remove_task(task)
            self.done += 1
            self.progress.update(self.overall, advance=1, count=f"{self.done}/{self.total}")
            style = _STYLE[result.status]
            self.progress.console.print(
                f"[{style}]{result.status:<7}[/] {result.cell.id}  {result.seconds:.1f} s  "
                f"{note(result)}",
                markup=True,
                highlight=False,
            )


_COLUMNS = ("cell", "status", "builder", "time", "size", "sha256", "artifact / reason")
# How narrow each column may be cut (with …) to fit the terminal; the last, the artifact or the
# reason with its log path, is never cut: it wraps, at least REASON_MIN wide.
_MIN_WIDTHS = (12, 7, 4, 7, 5, 3)
_SHRINK_ORDER = (5, 0, 2, 4, 3, 1)  # the sha256 first, the cell id, the builder, …
REASON_MIN = 30
_SHA_SHOWN = 16


@dataclass(frozen=True)
class Fit:
    """Column widths (all but the last) that make the table fit, and whether it drops its box
    (two spaces between columns instead of `│`) to make room."""

    widths: list[int]
    compact: bool


def fit_widths(natural: list[int], available: int) -> Fit | None:
    """How the table fits `available` columns with the last at least REASON_MIN wide; None when
    it fits as it is.  Columns are cut to their minimum in _SHRINK_ORDER, boxed when that is
    enough, else without the box, and on a terminal narrower still down to one character."""
    count = len(natural)
    if sum(natural) + 3 * count + 1 <= available:
        return None
    for compact, overhead in ((False, 3 * count + 1), (True, 2 * (count - 1))):
        widths = list(natural[:-1])
        excess = sum(widths) + min(natural[-1], REASON_MIN) + overhead - available
        for floor in (_MIN_WIDTHS, (1,) * len(widths)) if compact else (_MIN_WIDTHS,):
            for i in _SHRINK_ORDER:  # a terminal narrower than the minimums: down to `…`
                cut = min(max(excess, 0), max(widths[i] - floor[i], 0))
                widths[i] -= cut
                excess -= cut
        if excess <= 0 or compact:
            return Fit(widths=widths, compact=compact)
    raise AssertionError("unreachable")


def summary_table(results: list[CellResult], width: int | None = None) -> Table:
    """The run's table; with `width` (the console's) it fits: columns are cut with …, none is
    dropped, and the artifact / reason column wraps, at least REASON_MIN wide."""
    from rich.table import Table

    counts = {s: sum(r.status == s for r in results) for s in _STYLE}
    title = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    rows = [
        (
            r.cell.id,
            r.status,
            r.builder,
            f"{r.seconds:.1f} s",
            human_size(r.size),
            (r.sha256 or "—")[:_SHA_SHOWN],
            note(r),
        )
        for r in results
    ]
    natural = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(_COLUMNS)]
    fit = fit_widths(natural, width) if width else None
    table = Table(title=f"{len(results)} cells: {title}", title_justify="left")
    if fit and fit.compact:  # no box: two spaces between columns
        table.box, table.pad_edge = None, False
    for i, name in enumerate(_COLUMNS):
        if i == len(_COLUMNS) - 1:
            table.add_column(name, min_width=REASON_MIN if fit else None, overflow="fold")
        else:
            cut = fit.widths[i] if fit else None
            table.add_column(name, no_wrap=True, overflow="ellipsis", width=cut)
    for row in rows:
        status = row[1]
        cell = middle_cut(row[0], fit.widths[0]) if fit else row[0]
        table.add_row(cell, f"[{_STYLE[status]}]{status}[/]", *row[2:])
    return table


def middle_cut(text: str, width: int) -> str:
    """`wheel-l…x86_64-py3.12-cpu`: a cell id cut in the middle, so both its kind and the end that
    tells cells apart (the Python, the variant) stay."""
    if len(text) <= width or width < 3:
        return text
    head = (width - 1) // 3  # the end tells cells apart: it keeps two thirds
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


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


def failure_report(results: list[CellResult]) -> tuple[str, str] | None:
    """The message and hint of a run with failed cells (None without): how many failed, and
    for each failed cell (the first `SHOWN_FAILURES`) the line of its log that says why
    (relforge.builders.control.logtail), then the log's path."""
    failed = [r for r in results if r.status == "failed"]
    if not failed:
        return None
    lines = [
        f"{len(failed)} of {len(results)} cells failed: " + ", ".join(r.cell.id for r in failed)
    ]
    for r in failed[:SHOWN_FAILURES]:
        lines.append(f"  {r.cell.id}: {error_line(r.log) or r.reason}")
        if r.log:
            lines.append(f"    log: {shown(r.log)}")
    if len(failed) > SHOWN_FAILURES:
        more = len(failed) - SHOWN_FAILURES
        lines.append(f"  … and {more} more: their logs are beside these")
    hint = "the whole log of a cell is in the file named under it; fix the cause and build again"
    return "\n".join(lines), hint


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
