"""What a build run shows: the phase lines of a piped run, the live display's count and steps,
the summary table at any terminal width, and the failure's own error line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from relforge.builders.control.logtail import MAX_CHARS, error_line, error_line_of
from relforge.builders.executor import CellResult
from relforge.builders.progress import (
    REASON_MIN,
    LineReporter,
    LiveReporter,
    failure_report,
    middle_cut,
    summary_table,
)
from relforge.matrix import expand_cells, load_matrix
from tests.conftest import EXAMPLE

CELLS = expand_cells(load_matrix(str(EXAMPLE)), "1.0")
LONG_REASON = "the build command exited with code 1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines_reporter(total: int = 9) -> tuple[LineReporter, Clock, list[str]]:
    clock, said = Clock(), list[str]()
    return LineReporter(total, clock=clock, say=said.append), clock, said


def test_piped_lines_name_each_step_a_cell_enters_with_its_number_and_time() -> None:
    reporter, clock, said = lines_reporter()
    first, second = CELLS[0], CELLS[1]
    reporter.started(first, "host")
    reporter.started(second, "host")
    reporter.phase(second, "resolving build requirements")
    clock.now += 45
    reporter.phase(second, "pip wheel")
    assert said == [
        f"[2/9] {second.id}: resolving build requirements (0 s)",
        f"[2/9] {second.id}: pip wheel (45 s)",
    ]


def test_a_long_step_gets_a_still_line_each_heartbeat_and_a_finished_cell_none() -> None:
    reporter, clock, said = lines_reporter()
    cell = CELLS[0]
    reporter.started(cell, "host")
    reporter.phase(cell, "pip wheel")
    clock.now += 59
    reporter.tick()
    assert len(said) == 1  # not a minute yet
    clock.now += 1
    reporter.tick()
    clock.now += 60
    reporter.tick()
    reporter.tick()  # no second line for the same minute
    assert said[1:] == [
        f"[1/9] {cell.id}: still pip wheel, 1 min",
        f"[1/9] {cell.id}: still pip wheel, 2 min",
    ]
    reporter.finished(CellResult(cell=cell, status="built", builder="host", seconds=120))
    clock.now += 600
    reporter.tick()
    assert said[-1].startswith(f"[1/9] built   {cell.id} (host)  120.0 s")


def test_a_phase_of_a_cell_that_never_started_prints_nothing() -> None:
    reporter, _clock, said = lines_reporter()
    reporter.phase(CELLS[0], "pip wheel")
    reporter.tick()
    assert said == []


def test_the_heartbeat_thread_stops_with_the_reporter() -> None:
    reporter, _clock, _said = lines_reporter()
    with reporter:
        assert reporter._ticker is not None and reporter._ticker.is_alive()
    assert not reporter._ticker.is_alive()


def _rendered(live: LiveReporter, width: int = 160) -> str:
    out = Console(file=io.StringIO(), width=width, force_terminal=False)
    out.print(live.progress.get_renderable())
    text = out.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert isinstance(text, str)
    return text


def test_the_live_display_counts_done_of_total_from_the_start_and_shows_steps() -> None:
    screen = Console(file=io.StringIO(), width=160)
    live = LiveReporter(9, console=screen)
    shown = _rendered(live)
    assert "0/9" in shown and "?" not in shown
    live.started(CELLS[0], "host")
    live.phase(CELLS[0], "repair (auditwheel)")
    shown = _rendered(live)
    assert f"{CELLS[0].id} (host): repair (auditwheel)" in shown
    assert "0/9" in shown and "0/?" not in shown
    live.finished(CellResult(cell=CELLS[0], status="built", builder="host", seconds=3))
    shown = _rendered(live)
    assert "1/9" in shown and CELLS[0].id not in shown


def _results(tmp_path: Path) -> list[CellResult]:
    long_log = tmp_path / ".relforge" / "logs" / f"{CELLS[1].id}-with-a-long-name-indeed.log"
    return [
        CellResult(
            cell=CELLS[0],
            status="built",
            builder="docker",
            seconds=218.3,
            size=12_300_000,
            sha256="0123456789abcdef" * 4,
            artifact=tmp_path / "hello_native-1.0.0.dev0+cpu-cp310-cp310-manylinux_2_28_x86_64.whl",
        ),
        CellResult(
            cell=CELLS[1],
            status="failed",
            builder="host",
            seconds=3.5,
            reason=LONG_REASON,
            log=long_log,
        ),
    ]


@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_table_fits_the_terminal_and_keeps_every_column(tmp_path: Path, width: int) -> None:
    out = Console(file=io.StringIO(), width=width)
    out.print(summary_table(_results(tmp_path), width))
    text = out.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines), text
    header = next(line for line in lines if "status" in line)
    cut = [w.rstrip("…") for w in header.replace("┃", " ").split() if w.endswith("…")]
    for name in ("cell", "status", "builder", "time", "size", "sha256", "artifact / reason"):
        assert name in header or any(name.startswith(w) for w in cut), (name, text)
    # the reason column is never cut: wrapped, its words are all there
    flat = " ".join(" ".join(line.split()) for line in lines)
    assert all(word in flat for word in LONG_REASON.split()), text
    start = header.index("artifact / reason")
    assert width - start >= REASON_MIN
    # cut columns say so with …; at 200 columns nothing is cut
    assert ("…" in text) == (width < 200), text


def test_a_cut_cell_id_keeps_the_end_that_tells_cells_apart(tmp_path: Path) -> None:
    out = Console(file=io.StringIO(), width=80)
    out.print(summary_table(_results(tmp_path), 80))
    text = out.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    for cell in CELLS[:2]:
        assert cell.id[-6:] in text and cell.id not in text, text
    assert middle_cut("wheel-linux-x86_64-py3.12-cpu", 13) == "whee…3.12-cpu"
    assert middle_cut("short", 13) == "short"


def test_a_narrow_terminal_gets_every_column_too(tmp_path: Path) -> None:
    out = Console(file=io.StringIO(), width=60)
    out.print(summary_table(_results(tmp_path), 60))
    text = out.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert "artifact / reason" in text and all(w in text for w in LONG_REASON.split()), text
    assert max(len(line) for line in text.splitlines()) <= 60


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (  # a compiler error inside pip's box, before setuptools' and pip's framing
            "$ python -m pip wheel .\n"
            "  × Building wheel for hello (pyproject.toml) did not run successfully.\n"
            "  │ exit code: 1\n"
            "  ╰─> [4 lines of output]\n"
            "      src/hello.c:3:5: error: 'x' undeclared (first use in this function)\n"
            "      error: command '/usr/bin/gcc' failed with exit code 1\n"
            "  error: subprocess-exited-with-error\n"
            "ERROR: Failed building wheel for hello\n"
            "# exit 1 after 2.0 s\n",
            "src/hello.c:3:5: error: 'x' undeclared (first use in this function)",
        ),
        (  # a build script that raised: the exception's own line
            "$ python -m pip wheel .\n"
            "      Traceback (most recent call last):\n"
            '        File "setup.py", line 3, in <module>\n'
            "          raise RuntimeError('need CUDA_HOME')\n"
            "      RuntimeError: need CUDA_HOME\n"
            "      [end of output]\n"
            "ERROR: Failed to build installable wheels for some pyproject.toml based projects\n",
            "RuntimeError: need CUDA_HOME",
        ),
        (  # pip's own ERROR line, with no compiler or traceback
            "$ python -m pip install -r reqs\n"
            "ERROR: Could not find a version that satisfies the requirement numpy>=9\n"
            "ERROR: No matching distribution found for numpy>=9\n"
            "# exit 1 after 1.0 s\n",
            "ERROR: No matching distribution found for numpy>=9",
        ),
        (  # nothing says error: the last line that is not relforge's own
            "# relforge 1.0: cell\n$ sh -c 'exit 3'\ndeliberately broken\n\n# exit 3 after 0.1 s\n",
            "deliberately broken",
        ),
        ("", ""),
    ],
)
def test_the_error_line_of_a_log(log: str, expected: str) -> None:
    assert error_line_of(log) == expected


def test_a_long_error_line_is_cut_and_a_missing_log_gives_nothing(tmp_path: Path) -> None:
    assert len(error_line_of("error: " + "x" * 1000)) == MAX_CHARS
    assert error_line(tmp_path / "none.log") == "" and error_line(None) == ""


def test_the_failure_report_gives_each_cells_error_line_then_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    results = _results(tmp_path)
    log = results[1].log
    assert log is not None
    log.parent.mkdir(parents=True)
    log.write_text(
        '$ make\nfoo.cu(12): error: identifier "bar" is undefined\nmake: *** [x] Error 1\n'
    )
    report = failure_report(results)
    assert report is not None
    message, hint = report
    assert message.splitlines() == [
        f"1 of 2 cells failed: {CELLS[1].id}",
        f'  {CELLS[1].id}: foo.cu(12): error: identifier "bar" is undefined',
        f"    log: .relforge/logs/{log.name}",
    ]
    assert "log" in hint
    assert failure_report(results[:1]) is None


def test_a_failure_without_a_log_line_falls_back_to_the_reason(tmp_path: Path) -> None:
    result = CellResult(cell=CELLS[0], status="failed", builder="host", reason="interrupted")
    report = failure_report([result])
    assert report is not None and report[0].splitlines()[1] == f"  {CELLS[0].id}: interrupted"
