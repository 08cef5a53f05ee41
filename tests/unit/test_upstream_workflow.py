"""The generated relforge-upstream.yml: a daily `relforge upstream update --pull-request`, with no
permission but contents and pull-requests write, rendered only for a release that has something
upstream moves (dependency axes, pins); it passes the workflow linters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, PYTORCH, Result
from tests.workflows_support import load_workflows, run_linters, scratch_repo

Run = Callable[..., Result]
OUT = ".github/workflows"
NAME = "relforge-upstream.yml"


def _generate(root: Path, run: Run, source: Path, release: str, *args: str) -> Result:
    scratch_repo(root, source.read_text(encoding="utf-8"), "matrix/m.yaml")
    return run("workflows", "generate", "matrix/m.yaml", "-r", release, "--out", OUT, *args)


def test_the_upstream_job_runs_daily_with_write_access_to_contents_and_pull_requests_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _generate(tmp_path, run, PYTORCH, "2.9").code == 0
    workflow = load_workflows(tmp_path / OUT)[NAME]
    assert workflow["on"] == {"schedule": [{"cron": "41 5 * * *"}], "workflow_dispatch": None}
    assert workflow["permissions"] == {"contents": "read"}  # the default of every generated file
    job = workflow["jobs"]["upstream"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = job["steps"]
    assert [s["name"] for s in steps[:3]] == [
        "Check out the repository",
        "Set up Python for relforge",
        "Install relforge 0.1.0 from the runner's index",
    ]  # the shared setup (_setup.yml.j2): a pinned relforge
    last = steps[-1]
    assert last["run"] == (
        "relforge upstream update matrix/m.yaml --release 2.9 --pull-request --execute"
    )
    assert last["env"] == {"GITHUB_TOKEN": "${{ secrets.RELFORGE_UPSTREAM_TOKEN || github.token }}"}


def test_no_upstream_workflow_for_a_release_without_axes_or_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _generate(tmp_path, run, EXAMPLE, "1.0", "--no-upload").code == 0
    assert (tmp_path / OUT / "relforge-bot.yml").exists()
    assert not (tmp_path / OUT / NAME).exists()


@pytest.mark.slow
def test_the_upstream_workflow_lints_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    text = (Path(__file__).parents[1] / "upstream_data" / "ext.yaml").read_text(encoding="utf-8")
    # its CUDA cells build where nvcc is: a self-hosted runner (a hosted one is refused)
    text = text.replace("build_runner: ubuntu-24.04", "build_runner: linux-cuda-builder")
    scratch_repo(tmp_path, text, "matrix/ext.yaml")
    args = ("workflows", "generate", "matrix/ext.yaml", "-r", "0.5", "--out", OUT, "--no-upload")
    result = run(*args)
    assert result.code == 0, result.err
    assert (tmp_path / OUT / NAME).exists()
    assert run_linters(tmp_path) == {"actionlint": "", "zizmor": "", "check-jsonschema": ""}
