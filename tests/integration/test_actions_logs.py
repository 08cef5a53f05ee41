"""Under GitHub Actions a host build folds each cell's log into the job log, validation folds each
artifact's verdicts, and failures are `::error` annotations; outside Actions the same commands
print no workflow command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Run
from tests.integration.example_project import example_matrix
from tests.promote_kit import CELLS, matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow

CELL = "wheel-linux-x86_64-py3.12-cpu"
CPU = "wheel-linux-x86_64-py3.11-cpu"  # a cell of tests/promote_kit.py
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
    assert error.startswith(  # the build's own error line, then where its whole log is
        f"::error title=relforge%3A build failed::1 of 1 cells failed: {CELL}%0A"
        f"  {CELL}: ::error::injected%0A    log: .relforge/logs/{CELL}.log%0Ahint: "
    )
    assert summary.read_text(encoding="utf-8").count("### relforge build") == 2


def _folds(err: str) -> dict[str, list[str]]:
    """Each `::group::` title → the lines between its stop-commands and resume lines."""
    lines = err.splitlines()
    found: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        if line.startswith("::group::"):
            end = lines.index("::endgroup::", i)
            stop, *inside, resume = lines[i + 1 : end]
            assert resume == "::" + stop.removeprefix("::stop-commands::") + "::"
            found[line.removeprefix("::group::")] = inside
    return found


def test_validation_folds_each_artifacts_verdicts_and_annotates_failures(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the pure-Python wheels of tests/promote_kit.py fail the cells' CPython tags
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    args = ("validate", str(matrix), "-r", "1.0", "-c", "test", "--manifest", str(manifest))

    quiet = run(*args)
    assert quiet.code == 4 and "::" not in quiet.out + quiet.err

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run(*args)
    assert result.code == 4
    folds = _folds(result.err)
    assert {title.split(":")[0] for title in folds} == set(CELLS)
    cpu = next(inside for title, inside in folds.items() if title.startswith(f"{CPU}: "))
    assert any(line.startswith("pass  RF-V031 record-hashes") for line in cpu)  # passes too
    assert any(line.startswith("fail  RF-V012 cell-tags") for line in cpu)
    errors = [line for line in result.err.splitlines() if line.startswith("::error")]
    assert f"::error title=RF-V012 cell-tags ({CPU})::tags py3-none-" in "\n".join(errors)
    assert errors[-1].startswith("::error title=relforge%3A validation failed::")
    assert result.out == quiet.out  # the table on stdout is the same under Actions
