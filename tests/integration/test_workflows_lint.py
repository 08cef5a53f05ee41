"""The generated workflows against the real linters: actionlint (with shellcheck), zizmor
(offline) and check-jsonschema's GitHub-workflow schema — zero findings on every set."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, PYTORCH, REPO, Result
from tests.workflows_support import (
    big_matrix,
    load_workflows,
    run_linters,
    scratch_repo,
)

Run = Callable[..., Result]
OUT = ".github/workflows"
CLEAN = {"actionlint": "", "zizmor": "", "check-jsonschema": ""}
IGNORE = re.compile(r"# zizmor: ignore\[([a-z-]+)\](.*)")

pytestmark = pytest.mark.slow


def _render(
    root: Path, run: Run, matrix: str, release: str, *extra: str, name: str = "matrix/m.yaml"
) -> None:
    scratch_repo(root, matrix, name)
    result = run("workflows", "generate", name, "--release", release, "--out", OUT, *extra)
    assert result.code == 0, result.err
    assert (root / ".github" / "actionlint.yaml").is_file()  # written by generate, not by hand


def _ignores_carry_reasons(directory: Path) -> int:
    count = 0
    for path in directory.glob("*.yml"):
        for match in IGNORE.finditer(path.read_text()):
            assert len(match.group(2).split()) >= 5, f"{path.name}: ignore without a reason"
            count += 1
    return count


@pytest.fixture
def in_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def test_pytorch_29_has_no_findings(in_repo: Path, run: Run) -> None:
    _render(in_repo, run, PYTORCH.read_text(), "2.9")
    # + site, upstream, windows and macOS libtorch, promote, PyPI
    assert len(list((in_repo / OUT).glob("*.yml"))) == 13
    assert run_linters(in_repo) == CLEAN
    # the bot's triggers, and each `./.github/workflows/…` call (zizmor prefers `$/…`, which
    # GitHub Enterprise Server and act do not run), explained in place
    assert _ignores_carry_reasons(in_repo / OUT) == 2 + 12


def test_without_the_generated_config_actionlint_rejects_the_runner_labels(
    in_repo: Path, run: Run
) -> None:
    """The configuration is what makes the self-hosted labels pass: removed, actionlint fails;
    a user's own file (their label, other keys) is merged, and actionlint accepts both."""
    _render(in_repo, run, PYTORCH.read_text(), "2.9")
    config = in_repo / ".github" / "actionlint.yaml"
    config.unlink()
    found = run_linters(in_repo)["actionlint"]
    assert 'label "linux.g5.4xlarge.nvidia.gpu" is unknown' in found
    config.write_text(
        "self-hosted-runner:\n  labels: [my-own-runner]\nconfig-variables: [RUNNER]\n"
    )
    (in_repo / OUT / "mine.yml").write_text(
        "name: mine\non: push\npermissions: {}\njobs:\n  x:\n    runs-on: my-own-runner\n"
        '    timeout-minutes: 5\n    steps:\n      - run: echo "$RUNNER"\n'
        "        env:\n          RUNNER: ${{ vars.RUNNER }}\n"
    )
    args = ("workflows", "generate", "matrix/m.yaml", "--release", "2.9", "--out", OUT)
    assert run(*args, "--check").code == 4
    assert run(*args).code == 0
    assert run(*args, "--check").code == 0
    assert "my-own-runner" in config.read_text() and "config-variables" in config.read_text()
    assert run_linters(in_repo)["actionlint"] == ""


def test_pytorch_29_on_a_release_branch_with_s3_has_no_findings(in_repo: Path, run: Run) -> None:
    text = PYTORCH.read_text().replace("store: s3://pytorch ", "store: s3://pytorch-binaries/whl ")
    _render(in_repo, run, text, "2.9", "--ref", "release/2.9")
    build = (in_repo / OUT / "relforge-build.yml").read_text()
    assert "aws-actions/configure-aws-credentials@" in build
    site = (in_repo / OUT / "relforge-site.yml").read_text()
    assert "aws-actions/configure-aws-credentials@" in site and "id-token: write" in site
    assert run_linters(in_repo) == CLEAN
    assert _ignores_carry_reasons(in_repo / OUT) == 14  # + each call of the branch-pinned workflow


def test_example_project_has_no_findings(in_repo: Path, run: Run) -> None:
    _render(in_repo, run, EXAMPLE.read_text(), "1.0", "--no-upload", name="matrix/example.yaml")
    assert run_linters(in_repo) == CLEAN


def test_the_example_with_an_s3_store_has_no_findings(in_repo: Path, run: Run) -> None:
    """Every workflow, promote and PyPI included, with a pinned relforge by URL."""
    text = EXAMPLE.read_text().replace(
        "store: file://.relforge/store",
        "store: s3://hello/dl\n  s3_endpoint_url: https://r2.example",
    )
    pin = "ci:\n  relforge: 'relforge @ https://x.example/relforge-0.2.0-py3-none-any.whl#sha256="
    text = text.replace("schema_version: 1\n", f"schema_version: 1\n{pin}{'0' * 64}'\n")
    _render(in_repo, run, text, "1.0", name="matrix/example.yaml")
    assert {p.name for p in (in_repo / OUT).glob("relforge-*.yml")} >= {
        "relforge-promote.yml",
        "relforge-pypi.yml",
    }
    assert run_linters(in_repo) == CLEAN


def test_a_matrix_over_256_cells_is_sharded_and_lints_clean(in_repo: Path, run: Run) -> None:
    pythons = ("3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t")
    _render(in_repo, run, big_matrix(20, pythons), "1.0")  # 20 × 7 × 2 = 280 linux wheels
    workflow = load_workflows(in_repo / OUT)["relforge-linux-wheel.yml"]
    sizes = {
        job_id: len(job["strategy"]["matrix"]["include"])
        for job_id, job in workflow["jobs"].items()
        if "strategy" in job
    }
    assert sizes == {"pr-1": 40, "build-1": 140, "build-2": 140}
    assert workflow["jobs"]["index"]["needs"] == ["build-1", "build-2"]
    validate = load_workflows(in_repo / OUT)["relforge-validate-binaries.yml"]["jobs"]
    assert all(len(j["strategy"]["matrix"]["include"]) <= 256 for j in validate.values())
    assert run_linters(in_repo) == CLEAN


def test_this_repositorys_workflows_have_no_findings() -> None:
    """ci.yml (hand-written) and the committed example workflows, as CI sees them."""
    assert (REPO / OUT / "ci.yml").is_file()
    assert run_linters(REPO) == CLEAN


def test_the_linters_do_find_problems(in_repo: Path, run: Run) -> None:
    """The gate can fail: a workflow with an unpinned action, an expression in a script and an
    unknown runner label gets findings from each linter."""
    _render(in_repo, run, EXAMPLE.read_text(), "1.0", "--no-upload", name="matrix/example.yaml")
    (in_repo / OUT / "bad.yml").write_text(
        "name: bad\non: pull_request\njobs:\n  x:\n    runs-on: no-such-runner\n"
        "    timeout: 5\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    found = run_linters(in_repo)
    assert "no-such-runner" in found["actionlint"]
    assert "template-injection" in found["zizmor"] and "unpinned-uses" in found["zizmor"]
    assert "bad.yml" in found["check-jsonschema"]
