"""The generated relforge-site.yml: renders the site on every run, uploads it only for a pushed
release tag or a manual run asked to execute, and exists only when the matrix has URLs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import PYTORCH, Result
from tests.workflows_support import load_workflows, scratch_repo

Run = Callable[..., Result]
OUT = ".github/workflows"


def _generate(root: Path, run: Run, text: str) -> Result:
    scratch_repo(root, text, "matrix/pytorch.yaml")
    return run("workflows", "generate", "matrix/pytorch.yaml", "-r", "2.9", "--out", OUT)


def test_the_site_job_is_a_dry_run_unless_a_release_tag_is_pushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _generate(tmp_path, run, PYTORCH.read_text()).code == 0
    workflow = load_workflows(tmp_path / OUT)["relforge-site.yml"]
    on = workflow["on"]  # load_workflows files YAML 1.1's `on: → True` key under "on"
    assert on["push"] == {
        "tags": ["v[0-9]+.[0-9]+.[0-9]+-rc[0-9]+", "v[0-9]+.[0-9]+.[0-9]+"]
    }  # no branch push, no pull request ever uploads
    assert on["workflow_dispatch"]["inputs"]["execute"]["default"] is False
    job = workflow["jobs"]["site"]
    # the S3 store's credentials: an OIDC role when the repository sets one
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    steps = {s["name"]: s for s in job["steps"]}
    render = steps["Render the site"]["run"]
    assert render == "relforge site matrix/pytorch.yaml --release 2.9 --out .relforge/site"
    upload = steps["Upload the site with the release"]
    assert upload["env"]["EXECUTE"] == "${{ github.event_name == 'push' || inputs.execute }}"
    assert 'if [ "$EXECUTE" = true ]; then set -- --execute; fi' in upload["run"]
    assert upload["run"].rstrip().endswith('--publish "$@"')
    assert "${{" not in upload["run"]
    kept = steps["Keep the site"]
    assert kept["with"]["path"] == ".relforge/site/"


def test_no_site_workflow_without_a_download_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    text = PYTORCH.read_text().replace("  download_url: https://download.pytorch.org\n", "")
    result = _generate(tmp_path, run, text)
    assert result.code == 0
    assert "skipped .github/workflows/relforge-site.yml: project.download_url" in result.err
    assert not (tmp_path / OUT / "relforge-site.yml").exists()
