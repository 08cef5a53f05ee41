"""A new project's first hour, as the README tells it: `relforge init` in a fresh repository,
the workflows it names, a clean `--check` and clean linters with no hand edit, and a dry-run
`release cut` that plans the branch and changes nothing on the remote."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.gitrepos import git, make_repos
from tests.releaseproject import snapshot
from tests.workflows_support import run_linters

Run = Callable[..., Result]
CLEAN = {"actionlint": "", "zizmor": "", "check-jsonschema": ""}

PYPROJECT = """\
[build-system]
requires = ["setuptools>=70"]
build-backend = "setuptools.build_meta"

[project]
name = "hello-ext"
version = "0.3.0a0"
requires-python = ">=3.11"
"""

pytestmark = pytest.mark.slow


def _relforge(run: Run, command: str) -> Result:
    argv = shlex.split(command)
    assert argv[0] == "relforge", command
    return run(*argv[1:])


def test_from_init_to_a_dry_run_release_cut_without_hand_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    repos = make_repos(
        tmp_path,
        {
            "pyproject.toml": PYPROJECT,
            "version.txt": "0.3.0a0\n",
            "src/hello_ext/__init__.py": '__version__ = "0.3.0a0"\n',
            "src/hello_ext/kernel.cu": "__global__ void noop() {}\n",  # so: a CUDA variant
            ".gitignore": ".relforge/\ndist/\n",  # what init would add: the tree stays clean
        },
    )
    monkeypatch.chdir(repos.clone)

    init = run("init", "--download-url", "https://download.example.org")
    assert init.code == 0, init.err
    assert "wrote matrix/hello-ext.yaml: release 0.3" in init.out
    next_commands = [line.strip() for line in init.out.split("next:\n")[1].splitlines()]
    assert next_commands[0] == "relforge matrix lint --strict matrix/hello-ext.yaml"
    linted = _relforge(run, next_commands[0])  # exactly what init printed
    assert linted.code == 0, linted.out + linted.err

    # the README's CI step after the printed commands (a file:// store: --no-upload)
    generate = "relforge workflows generate matrix/hello-ext.yaml --release 0.3 --out "
    generate += ".github/workflows --no-upload"
    written = _relforge(run, generate)
    assert written.code == 0, written.err
    assert "created   .github/actionlint.yaml (runner labels: linux-gpu, ubuntu-24.04)" in (
        written.out
    )
    check = _relforge(run, generate + " --check")
    assert check.code == 0, check.out + check.err
    assert run_linters(repos.clone) == CLEAN  # actionlint, zizmor, check-jsonschema

    # the gate can fail: without the generated config actionlint rejects the GPU runner
    config = repos.clone / ".github" / "actionlint.yaml"
    kept = config.read_text()
    config.unlink()
    assert 'label "linux-gpu" is unknown' in run_linters(repos.clone)["actionlint"]
    assert _relforge(run, generate + " --check").code == 4
    config.write_text(kept)

    git(repos.clone, "add", "-A")
    git(repos.clone, "commit", "-q", "-m", "relforge: starter matrix and generated CI")
    git(repos.clone, "push", "-q", "origin", "main")
    before = snapshot(repos)
    cut = run("release", "cut", "0.3")
    assert cut.code == 0, cut.err
    assert "dry run" in cut.out and "pass --execute" in cut.out
    assert "matrix/hello-ext.yaml" in cut.out and "+  default: test" in cut.out
    assert "+0.4.0a0" in cut.out
    assert snapshot(repos) == before  # nothing changed on origin, nor in the clone

    # and the cut itself leaves a branch whose generated files are current
    assert run("release", "cut", "0.3", "--execute").code == 0
    git(repos.clone, "fetch", "-q", "origin")
    git(repos.clone, "switch", "-q", "release/0.3")
    branch_check = run(
        "workflows",
        "generate",
        "matrix/hello-ext.yaml",
        "--release",
        "0.3",
        "--out",
        ".github/workflows",
        "--no-upload",
        "--check",
    )
    assert branch_check.code == 0, branch_check.out + branch_check.err
    assert run_linters(repos.clone) == CLEAN
