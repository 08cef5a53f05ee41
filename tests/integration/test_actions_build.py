"""Under GitHub Actions a host build folds each cell's log into the job log and the failure is an
`::error` annotation; outside Actions the same build prints no workflow command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Run
from tests.integration.example_project import example_matrix

pytestmark = pytest.mark.slow

CELL = "wheel-linux-x86_64-py3.12-cpu"
# a build that logs a line with characters the runner would read as commands, then fails
FAILING = "    command: [sh, -c, 'echo \"compiling 100%: done\"; echo ::error::injected; exit 3']"


def _build(run: Run, matrix: Path) -> tuple[int, str]:
    result = run("build", str(matrix), "--release", "1.0", "--builder", "host", "--cell", CELL)
    return result.code, result.err


def test_a_failed_cells_log_is_folded_and_the_failure_annotated(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path
    monkeypatch.chdir(workdir)
    matrix = example_matrix(workdir, {"    command: []": FAILING})
    summary = workdir / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    code, quiet = _build(run, matrix)
    assert code == 4
    assert not [line for line in quiet.splitlines() if line.startswith("::")]

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, err = _build(run, matrix)
    assert code == 4
    lines = err.splitlines()
    start = lines.index(f"::group::{CELL}: build log (failed)")
    end = lines.index("::endgroup::", start)
    stop, *folded, resume = lines[start + 1 : end]
    # the log as written, inside the fold, with the runner's commands off while it is shown:
    # a build that prints `::error::` makes no annotation
    token = stop.removeprefix("::stop-commands::")
    assert len(token) == 32 and resume == f"::{token}::"
    assert "compiling 100%: done" in folded and "::error::injected" in folded
    log = (workdir / ".relforge" / "logs" / f"{CELL}.log").read_text(encoding="utf-8")
    assert folded == log.splitlines()
    assert lines[start - 1].startswith(f"[1/1] failed  {CELL} (host)")
    [error] = [line for line in lines[end:] if line.startswith("::error")]
    assert error.startswith(
        f"::error title=relforge%3A validation failed::1 of 1 cells failed: {CELL}%0Ahint: "
    )
    assert summary.read_text(encoding="utf-8").count("### relforge build") == 2
