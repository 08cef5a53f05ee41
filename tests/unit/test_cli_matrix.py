"""The `relforge matrix` commands end to end: output shapes, exit codes, no tracebacks."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLE, PYTORCH, REPO, SMALL, Result, Write
from tests.gitrepos import work_tree

Run = Callable[..., Result]


def test_list_json_is_the_cell_contract(run: Run) -> None:
    result = run(
        "matrix",
        "list",
        str(PYTORCH),
        "--release",
        "2.9",
        "--select",
        "os=linux",
        "--format",
        "json",
    )
    assert result.code == 0, result.err
    listed = json.loads(result.out)
    assert listed["schema_version"] == 1 and listed["release"] == "2.9"
    cells = listed["cells"]
    assert len(cells) == 49 + 28 + 7 + 6  # x86_64, aarch64, s390x wheels; archives
    assert {c["package_type"] for c in cells} == {"wheel", "archive"}
    assert all(isinstance(c["extra_install_requires"], list) for c in cells)


def test_list_github_format(run: Run) -> None:
    result = run(
        "matrix", "list", str(EXAMPLE), "-r", "1.0", "--format", "github", "--channel", "test"
    )
    data = json.loads(result.out)
    assert list(data) == ["include"] and len(data["include"]) == 9
    assert data["include"][0]["version"] == "1.0.0+cpu"


def test_list_table(run: Run) -> None:
    result = run("matrix", "list", str(EXAMPLE), "-r", "1.0")
    assert result.code == 0
    assert "wheel-linux-x86_64-py3.13-cu130" in result.out and "9 cells" in result.out


def test_step_summary(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run("matrix", "list", str(EXAMPLE), "-r", "1.0", "--format", "json")
    run("matrix", "diff", str(PYTORCH), "--from", "2.8", "--to", "2.9")
    text = summary.read_text()
    assert "| wheel | linux-x86_64 | 8 |" in text
    assert "## Releng: PyTorch 2.8 → 2.9" in text


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--select", "os=linux,pyton>=3.12"], 2, "usage error: --select 'os=linux,pyton>=3.12'"),
        (["--select", "os=haiku"], 3, "nothing to do"),
        (["--channel", "beta"], 2, "Invalid value for '--channel'"),
        (["--date", "yesterday", "--channel", "nightly"], 2, "--date"),
        (["--date", "2025-10-15"], 2, "--date: only nightly versions carry a date"),
        (["--date", "2025-10-15", "--channel", "test"], 2, "give --channel nightly"),
    ],
)
def test_list_usage_errors(run: Run, args: list[str], code: int, words: str) -> None:
    result = run("matrix", "list", str(EXAMPLE), "-r", "1.0", *args)
    assert result.code == code
    assert words in result.err
    assert result.out == ""
    assert "Traceback" not in result.err


def test_unknown_release(run: Run) -> None:
    result = run("matrix", "list", str(EXAMPLE), "-r", "9.9")
    assert result.code == 2
    assert "release '9.9' is not in" in result.err and "releases: 1.0" in result.err


def test_bad_file_is_one_paragraph(run: Run, write: Write) -> None:
    path = write(SMALL.replace("kind: cuda", "kind: gpu"))
    result = run("matrix", "list", str(path), "-r", "1.0", "--format", "json")
    assert result.code == 2
    assert result.out == ""
    line = SMALL.splitlines().index("        kind: cuda") + 1
    assert result.err.startswith(
        f"config error: {path}:{line}:15: releases.1.0.accelerators.cu128.kind: 'gpu' is not one of"
    )
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) <= 2


def test_explain(run: Run) -> None:
    result = run("matrix", "explain", str(PYTORCH), "-r", "2.9", "wheel-linux-x86_64-py3.13t-cu128")
    assert result.code == 0
    assert result.out.startswith("wheel-linux-x86_64-py3.13t-cu128 is built in release 2.9.")
    assert f"({PYTORCH}:" in result.out
    result = run("matrix", "explain", str(PYTORCH), "-r", "2.9", "nope", "--format", "json")
    assert result.code == 2 and "no cell of release 2.9" in result.err
    result = run(
        "matrix",
        "explain",
        str(PYTORCH),
        "-r",
        "2.9",
        "--format",
        "json",
        "wheel-linux-aarch64-py3.12-rocm6.4",
    )
    assert json.loads(result.out)["status"] == "not-offered"


def test_diff_json_and_missing_to(run: Run) -> None:
    result = run("matrix", "diff", str(PYTORCH), "--from", "2.8", "--to", "2.9", "--format", "json")
    data = json.loads(result.out)
    assert data["python_removed"] == ["3.9"] and data["python_added"] == ["3.14", "3.14t"]
    result = run("matrix", "diff", str(PYTORCH), "--from", "2.8")
    assert result.code == 2 and "--to" in result.err


def test_diff_between_git_revisions(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = work_tree(tmp_path / "repo", {"matrix.yaml": SMALL})
    (repo / "matrix.yaml").write_text(SMALL.replace('"3.11", "3.12", "3.13t"', '"3.12", "3.13t"'))
    monkeypatch.chdir(repo)
    result = run("matrix", "diff", "HEAD:matrix.yaml", "matrix.yaml", "--from", "1.0")
    assert result.code == 0, result.err
    assert "- Removed Python 3.11." in result.out
    assert "## Releng: demo 1.0 (HEAD:matrix.yaml) → 1.0 (matrix.yaml)" in result.out
    result = run("matrix", "diff", "HEAD~5:matrix.yaml", "matrix.yaml", "--from", "1.0")
    assert result.code == 2 and "git cannot show it" in result.err


def test_docs_out_and_no_partial_output(run: Run, tmp_path: Path, write: Write) -> None:
    out = tmp_path / "COMPAT.md"
    result = run("matrix", "docs", str(PYTORCH), "--out", str(out))
    assert result.code == 0 and out.read_text().startswith("# PyTorch compatibility matrix")
    bad = write("releases: {}\n", "bad.yaml")
    other = tmp_path / "OTHER.md"
    result = run("matrix", "docs", str(bad), "--out", str(other))
    assert result.code == 2 and not other.exists()


def test_lint_exit_codes(run: Run, write: Write) -> None:
    assert run("matrix", "lint", str(EXAMPLE)).code == 0
    warn = run("matrix", "lint", str(PYTORCH))
    assert warn.code == 0 and "RF-L007" in warn.out
    strict = run("matrix", "lint", str(PYTORCH), "--strict")
    assert strict.code == 4 and "validation failed" in strict.err
    broken = write(
        SMALL.replace(
            "    include: []\n", "    include: []\n    pypi_default: {windows-x86_64: cu130}\n"
        )
    )
    result = run("matrix", "lint", str(broken), "--format", "json")
    assert result.code == 4
    assert [f["id"] for f in json.loads(result.out)["findings"]] == ["RF-L004", "RF-L008"]


def test_check(run: Run) -> None:
    result = run("matrix", "check", str(PYTORCH))
    assert result.code == 0 and "4 releases" in result.out


def test_internal_errors_have_no_traceback(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    import relforge.cli.matrix as cli_matrix

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli_matrix, "load_matrix", boom)
    result = run("matrix", "check", str(EXAMPLE))
    assert result.code == 1
    assert "internal error: RuntimeError: kaboom" in result.err and "Traceback" not in result.err
    result = run("--debug", "matrix", "check", str(EXAMPLE))
    assert result.code == 1 and "Traceback" in result.err


def test_module_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "relforge", "matrix", "check", str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "1 releases" in done.stdout


def test_an_unwritable_step_summary_is_a_warning_not_a_failure(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a directory
    result = run("matrix", "list", str(EXAMPLE), "-r", "1.0", "--format", "json")
    assert result.code == 0, result.err
    assert len(json.loads(result.out)["cells"]) == 9  # the command's own output is whole
    assert "warning: cannot append to $GITHUB_STEP_SUMMARY" in result.err
    assert str(tmp_path) in result.err and "internal error" not in result.err
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir.md"))
    result = run("matrix", "diff", str(PYTORCH), "--from", "2.8", "--to", "2.9")
    assert result.code == 0 and "## Releng" in result.out
    assert "warning: cannot append to $GITHUB_STEP_SUMMARY" in result.err


@pytest.mark.parametrize("out", ["", ".", "README.md/COMPAT.md"])
def test_docs_out_without_a_file_name_is_a_usage_error(
    run: Run, out: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    result = run("matrix", "docs", str(EXAMPLE), "--out", out)
    assert result.code == 2, result.err
    assert "--out" in result.err and "internal error" not in result.err
    assert result.out == ""


def test_docs_out_that_cannot_be_written_leaves_no_temporary_file(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, target: object) -> Path:
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr(Path, "replace", refuse)
    result = run("matrix", "docs", str(EXAMPLE), "--out", str(tmp_path / "COMPAT.md"))
    assert result.code == 6 and "--out" in result.err and "Permission denied" in result.err
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary sibling


def test_diff_names_the_flag_of_a_missing_release(run: Run) -> None:
    result = run("matrix", "diff", str(PYTORCH), str(EXAMPLE), "--from", "2.9")
    assert result.code == 2 and result.out == ""
    assert "--to: release '2.9' is not in" in result.err and "example.yaml" in result.err
    result = run("matrix", "diff", str(PYTORCH), "--from", "3.0", "--to", "2.9")
    assert result.code == 2 and "--from: release '3.0' is not in" in result.err


def test_rev_path_that_is_a_directory_or_not_utf8(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    latin1 = SMALL.replace("demo", "d\xe9mo").encode("latin-1")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "latin1.yaml").write_bytes(latin1)  # committed with the matrix below
    work_tree(repo, {"matrix/m.yaml": SMALL})
    monkeypatch.chdir(repo)
    assert run("matrix", "check", "HEAD:matrix/m.yaml").code == 0
    result = run("matrix", "check", "HEAD:matrix")
    assert result.code == 2 and "HEAD:matrix: is a directory at that revision" in result.err
    result = run("matrix", "check", "HEAD:latin1.yaml")
    assert result.code == 2, result.err
    assert "HEAD:latin1.yaml: not UTF-8 text" in result.err
    assert "internal error" not in result.err


def test_list_of_a_release_whose_rules_exclude_everything(run: Run, write: Write) -> None:
    rule = '- match: {platform: windows-x86_64, python: "3.13t"}'
    assert rule in SMALL
    path = write(SMALL.replace(rule, '- match: {package_type: "*"}'))
    result = run("matrix", "list", str(path), "-r", "1.0")
    assert result.code == 3 and result.out == ""
    assert "release 1.0 has no cells: its exclude rules remove all 16" in result.err
    assert "--select" not in result.err


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.EIO, "Input/output error"), (errno.EMFILE, "Too many open files")],
)
def test_a_failing_disk_or_exhausted_file_handles_are_environment_faults(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    def fail(self: Path, target: object) -> Path:
        raise OSError(code, reason, str(target))

    monkeypatch.setattr(Path, "replace", fail)
    result = run("matrix", "docs", str(EXAMPLE), "--out", str(tmp_path / "COMPAT.md"))
    assert result.code == 6 and reason in result.err and "internal error" not in result.err
    assert len(result.err.strip().splitlines()) == 2  # the paragraph and its hint


def test_list_without_release_takes_the_newest_and_says_which(run: Run, write: Write) -> None:
    """By version, not by file order or string order: 1.10 is newer than 1.9."""
    text = SMALL + '  "1.10":\n    extends: "1.0"\n    python: ["3.12"]\n'
    text += '  "1.9":\n    extends: "1.0"\n    python: ["3.11"]\n'
    path = write(text)
    result = run("matrix", "list", str(path), "--format", "json")
    assert result.code == 0, result.err
    assert {c["release"] for c in json.loads(result.out)["cells"]} == {"1.10"}
    count = len(yaml.safe_load(text)["releases"])
    assert result.err == f"release 1.10: the newest of {count}; pick another with --release\n"
    only = run("matrix", "list", str(EXAMPLE))
    assert only.code == 0 and "9 cells" in only.out
    assert "release 1.0: the newest, the only one" in only.err
    picked = run("matrix", "list", str(path), "-r", "1.9", "--format", "json")
    assert {c["release"] for c in json.loads(picked.out)["cells"]} == {"1.9"} and picked.err == ""
