"""What makes a generated workflow runnable on a real runner, and the matrices the generator
refuses because some runner of theirs could not do its job (exit 2, file:line, nothing
written).  Each test here fails on the generator before `ci.relforge`: it installed an
unpublished `relforge==0.1.0`, built on the runner without the cell's Python, sent CUDA cells to
a hosted runner without their image, uploaded to each runner's own disk, left archive uploads
unindexed and called its reusable workflow as `$/…`.  tests/integration/test_generated_ci.py
runs the same workflows with act."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge import __version__
from relforge.workflows.toolpins import package_tool_pins
from tests.conftest import EXAMPLE, Result
from tests.workflows_support import load_workflows, scratch_repo, steps

Run = Callable[..., Result]
OUT = ".github/workflows"
SHA = hashlib.sha256(b"relforge").hexdigest()
URL = f"https://files.example.org/relforge-0.2.0-py3-none-any.whl#sha256={SHA}"
S3 = "store: s3://bucket/dl\n  s3_endpoint_url: https://s3.example.org"
LOCAL_STORE = "store: file://.relforge/store      # relative to the working directory"
CPU_IMAGE = "          linux-x86_64: {image: relforge/builder:bookworm}"


def _matrix(*edits: tuple[str, str], ci: str = "") -> str:
    text = EXAMPLE.read_text(encoding="utf-8").replace(LOCAL_STORE, S3)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text.replace("schema_version: 1\n", f"schema_version: 1\n{ci}", 1)


def _generate(tmp_path: Path, run: Run, text: str, *args: str) -> tuple[Result, Path]:
    """Generate from the repository root, as the README says."""
    root = tmp_path / "repo"
    scratch_repo(root, text, "matrix/example.yaml")
    here = Path.cwd()
    os.chdir(root)
    try:
        result = run(
            "workflows", "generate", "matrix/example.yaml", "-r", "1.0", "--out", OUT, *args
        )
    finally:
        os.chdir(here)
    return result, root


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # restored after the test, whatever _generate did
    return tmp_path


def _rendered(tmp_path: Path, run: Run, text: str, *args: str) -> dict[str, dict[str, Any]]:
    result, root = _generate(tmp_path, run, text, *args)
    assert result.code == 0, result.err
    return load_workflows(root / OUT)


def _refused(tmp_path: Path, run: Run, text: str, *needles: str, args: tuple[str, ...] = ()) -> str:
    result, root = _generate(tmp_path, run, text, *args)
    assert result.code == 2, (result.out, result.err)
    for needle in needles:
        assert needle in result.err, result.err
    assert "Traceback" not in result.err
    assert not (root / OUT).exists(), "nothing may be written when the matrix is refused"
    return result.err


def _install_steps(flows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        step
        for workflow in flows.values()
        for _job, step in steps(workflow)
        if step.get("name", "").startswith("Install relforge")
    ]


# --- the pinned relforge ------------------------------------------------------------------------


def test_every_job_installs_the_relforge_that_generated_it_by_default(
    in_tmp: Path, run: Run
) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    installs = _install_steps(flows)
    jobs = sum(len(w["jobs"]) for w in flows.values()) - sum(
        1 for w in flows.values() for j in w["jobs"].values() if "uses" in j
    )
    assert len(installs) == jobs  # every job that runs steps installs it, once
    for step in installs:
        assert step["env"]["RELFORGE_REQUIREMENT"] == f"relforge=={__version__}"
        # its own venv, from the runner's index, never an sdist, never the job's `python`
        assert 'venv --without-pip "$venv"' in step["run"]
        assert "--only-binary=:all:" in step["run"]
        assert '"$RELFORGE_REQUIREMENT"' in step["run"]
        # by the pinned uv, itself installed by the sha256 of its wheels
        assert step["env"]["RELFORGE_UV"] == package_tool_pins()["uv"].requirement
        assert "--require-hashes" in step["run"] and '"$uv" pip install' in step["run"]


@pytest.mark.parametrize(
    ("value", "requirement"),
    [
        ("relforge==0.2.0", "relforge==0.2.0"),
        ("  relforge == 0.2.0 ", "relforge==0.2.0"),
        (f"relforge @ {URL}", f"relforge @ {URL}"),
        (
            f"relforge @ http://127.0.0.1:8080/relforge-0.2.0-py3-none-any.whl#sha256={SHA}",
            f"relforge @ http://127.0.0.1:8080/relforge-0.2.0-py3-none-any.whl#sha256={SHA}",
        ),
    ],
)
def test_ci_relforge_is_what_every_job_installs(
    in_tmp: Path, run: Run, value: str, requirement: str
) -> None:
    flows = _rendered(in_tmp, run, _matrix(ci=f'ci:\n  relforge: "{value}"\n'))
    installs = _install_steps(flows)
    assert installs and {s["env"]["RELFORGE_REQUIREMENT"] for s in installs} == {requirement}
    if "sha256" in requirement:
        assert all(f"(sha256 {SHA[:12]}…)" in s["name"] for s in installs)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("relforge", "does not pin one version"),
        ("relforge>=0.2", "does not pin one version"),
        ("relforge==0.2.*", "does not pin one version"),
        ("relforge===0.2.0", "does not pin one version"),
        ("relforge==0.2.0,<1", "does not pin one version"),
        ("relforgex==0.2.0", "installs 'relforgex', not relforge"),
        ("relforge==0.2.0; python_version>'3'", "has an environment marker"),
        ("relforge[s3]==0.2.0", "asks for extras"),
        ("relforge==0.2.0+local", "pins a local version"),
        ("relforge @ https://x.org/relforge-0.2.0-py3-none-any.whl", "no #sha256="),
        (f"relforge @ https://x.org/relforge-0.2.0.whl#sha256={SHA[:-1]}", "no #sha256="),
        (f"relforge @ https://x.org/relforge-0.2.0.whl#sha256={SHA.upper()}", "no #sha256="),
        (f"relforge @ https://x.org/relforge-0.2.0.tar.gz#sha256={SHA}", "does not name a wheel"),
        (f"relforge @ http://files.example.org/r-0.2.0.whl#sha256={SHA}", "plain http"),
        ("relforge @ git+https://github.com/x/relforge@v0.2.0", "VCS URL"),
        (f"relforge @ ftp://x.org/relforge-0.2.0.whl#sha256={SHA}", "scheme 'ftp'"),
        ("relforge ==", "is not a PEP 508 requirement"),
    ],
)
def test_a_loose_or_unchecked_relforge_is_refused(
    in_tmp: Path, run: Run, value: str, message: str
) -> None:
    text = _matrix(ci=f'ci:\n  relforge: "{value}"\n')
    err = _refused(in_tmp, run, text, message, "ci.relforge", "hint:")
    line = text.splitlines().index(f'  relforge: "{value}"') + 1
    assert f"matrix/example.yaml:{line}:13: ci.relforge:" in err  # the place of the value


@pytest.mark.parametrize(
    ("ci", "message"),
    [
        ('ci:\n  python: "3.9"\n', "relforge runs on CPython 3.10 or newer"),
        ('ci:\n  python: "3.13t"\n', "with the GIL"),
        ('ci:\n  runner: "ubuntu latest"\n', "may hold only letters"),
        ("ci:\n  relfroge: relforge==0.2.0\n", "did you mean 'relforge'"),
    ],
)
def test_bad_ci_keys_are_refused(in_tmp: Path, run: Run, ci: str, message: str) -> None:
    _refused(in_tmp, run, _matrix(ci=ci), message, "ci.")


def test_ci_python_and_runner_reach_relforges_own_jobs(in_tmp: Path, run: Run) -> None:
    text = _matrix(ci='ci:\n  python: "3.13"\n  runner: releng-linux\n')
    flows = _rendered(in_tmp, run, text)
    for workflow in flows.values():
        for _job, step in steps(workflow):
            if step.get("name") == "Set up Python for relforge":
                assert step["with"] == {"python-version": "3.13", "update-environment": False}
    assert flows["relforge-build.yml"]["jobs"]["upload"]["runs-on"] == "releng-linux"
    assert flows["relforge-linux-wheel.yml"]["jobs"]["index"]["runs-on"] == "releng-linux"
    assert flows["relforge-promote.yml"]["jobs"]["promote"]["runs-on"] == "releng-linux"


# --- every cell builds where it can be built ----------------------------------------------------


def test_a_host_build_sets_up_the_cells_python_first(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix((CPU_IMAGE, "          linux-x86_64: {}")))
    build = flows["relforge-build.yml"]["jobs"]["build"]["steps"]
    names = [s["name"] for s in build]
    cell_python = names.index("Set up the cell's Python (a build on the runner)")
    assert names.index("Install relforge 0.1.0 from the runner's index") < cell_python
    assert cell_python < names.index("Build the cell")
    setup = build[cell_python]
    assert setup["if"] == "inputs.builder == 'host' && inputs.python != ''"
    assert setup["with"] == {"python-version": "${{ inputs.python }}"}  # 3.13t: free-threaded
    (job,) = [j for k, j in flows["relforge-linux-wheel.yml"]["jobs"].items() if k == "build-1"]
    builders = {e["id"]: e["builder"] for e in job["strategy"]["matrix"]["include"]}
    assert builders["wheel-linux-x86_64-py3.10-cpu"] == "host"
    assert builders["wheel-linux-x86_64-py3.10-cu130"] == "docker"  # it names an image
    assert job["with"]["builder"] == "${{ matrix.builder }}"


def test_a_cell_with_an_image_builds_in_it_pulled_when_missing(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    (build,) = [s for s in flows["relforge-build.yml"]["jobs"]["build"]["steps"]
                if s["name"] == "Build the cell"]  # fmt: skip
    assert build["env"]["BUILDER"] == "${{ inputs.builder }}"
    assert 'if [ "$BUILDER" = docker ]; then set -- "$@" --pull missing; fi' in build["run"]
    assert '--builder "$BUILDER"' in build["run"]
    # an RC build stamps the version of the tag that started it
    assert 'if [ "$CHANNEL" = test ] && [ "$REF_TYPE" = tag ]; then set -- --tag' in build["run"]


def test_every_job_of_a_pushed_nightly_stamps_one_date(in_tmp: Path, run: Run) -> None:
    """The commit's date, not the clock's: cells built on either side of midnight UTC (and the
    test job that checks their version) agree, so the nightly can become whole."""
    flows = _rendered(in_tmp, run, _matrix())
    stamped = [
        (job, step["name"])
        for job, step in steps(flows["relforge-build.yml"])
        if 'SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"' in step.get("run", "")
    ]
    assert stamped == [("build", "Build the cell"), ("test", "Validate the artifact")]


CU130_IMAGE = (
    "            image: relforge/builder:bookworm\n            platform_tag: manylinux_2_34",
    "            platform_tag: manylinux_2_34",
)


def test_a_cuda_cell_without_an_image_on_a_hosted_runner_is_refused(in_tmp: Path, run: Run) -> None:
    _refused(
        in_tmp,
        run,
        _matrix(CU130_IMAGE),
        "wheel-linux-x86_64-py3.10-cu130 needs the CUDA 13.0 toolkit (nvcc), which ubuntu-24.04 "
        "(GitHub-hosted) does not have, and it names no image",
        "releases.1.0.accelerators.cu130.platforms.linux-x86_64.image",
        "matrix/example.yaml:",
        "relforge builder-image",
        "self-hosted runner",
    )


def test_a_cuda_cell_on_a_self_hosted_runner_builds_on_it(in_tmp: Path, run: Run) -> None:
    text = _matrix(CU130_IMAGE, ("build_runner: ubuntu-24.04", "build_runner: gpu-builder"))
    flows = _rendered(in_tmp, run, text)
    (job,) = [j for k, j in flows["relforge-linux-wheel.yml"]["jobs"].items() if k == "build-1"]
    by_id = {e["id"]: e for e in job["strategy"]["matrix"]["include"]}
    assert by_id["wheel-linux-x86_64-py3.12-cu130"]["builder"] == "host"
    assert by_id["wheel-linux-x86_64-py3.12-cu130"]["build_runner"] == "gpu-builder"


@pytest.mark.parametrize(
    ("edits", "message", "key"),
    [
        (
            [("build_runner: ubuntu-24.04", "build_runner: windows-2022")],
            "cannot run Linux containers",
            "accelerators.cpu.platforms.linux-x86_64.image",
        ),
        (
            [("build_runner: ubuntu-24.04", "build_runner: ubuntu-24.04-arm")],
            "is x86_64, but ubuntu-24.04-arm (GitHub-hosted) is aarch64",
            "platforms.linux-x86_64.build_runner",
        ),
        (
            [(CPU_IMAGE, "          linux-x86_64: {}"),
             ("build_runner: ubuntu-24.04", "build_runner: macos-15")],
            "a build on it makes macos arm64 binaries",
            "platforms.linux-x86_64.build_runner",
        ),
        (
            [("test_runners: {cpu: ubuntu-24.04,", "test_runners: {cpu: windows-latest,")],
            "cannot install a linux x86_64 artifact",
            "platforms.linux-x86_64.test_runners.cpu",
        ),
    ],
)  # fmt: skip
def test_a_hosted_runner_asked_for_what_it_cannot_do_is_refused(
    in_tmp: Path, run: Run, edits: list[tuple[str, str]], message: str, key: str
) -> None:
    _refused(in_tmp, run, _matrix(*edits), message, key, "hint:")


# --- publishing needs a shared store ------------------------------------------------------------


def test_uploading_jobs_for_a_local_store_are_refused(in_tmp: Path, run: Run) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    _refused(
        in_tmp,
        run,
        text,
        "publishing.store: the generated upload and index jobs need a store every runner reaches",
        "file://.relforge/store is a folder on each runner's own disk",
        "s3://BUCKET/PREFIX",
        "--no-upload",
    )
    default = text.replace(LOCAL_STORE, "nightly_keep: 5").replace("  nightly_keep: 5\n", "", 1)
    _refused(in_tmp / "b", run, default, "the embedded default (file://.relforge/store)")
    mirror = _matrix(
        (
            "  nightly_keep: 5\n",
            "  nightly_keep: 5\n  mirrors:\n    - {name: m, url: file:///srv}\n",
        )
    )
    _refused(in_tmp / "c", run, mirror, "publishing.mirrors[0].url", "mirror 'm'")


def test_no_upload_builds_and_tests_only(in_tmp: Path, run: Run) -> None:
    result, root = _generate(in_tmp, run, EXAMPLE.read_text(encoding="utf-8"), "--no-upload")
    assert result.code == 0, result.err
    flows = load_workflows(root / OUT)
    assert "upload" not in flows["relforge-build.yml"]["jobs"]
    for name in ("relforge-linux-wheel.yml", "relforge-linux-archive.yml"):
        jobs = flows[name]["jobs"]
        assert "index" not in jobs
        assert all(j["with"]["upload"] is False for j in jobs.values())
        assert all(j["permissions"] == {"contents": "read"} for j in jobs.values())
    assert "relforge-promote.yml" not in flows and "relforge-pypi.yml" not in flows
    assert (
        "skipped .github/workflows/relforge-promote.yml: generated with --no-upload" in result.err
    )
    header = (root / OUT / "relforge-build.yml").read_text().splitlines()[1]
    assert header.endswith("--no-upload`.")  # --check and release cut render it the same way


# --- every upload ends indexed; the reusable workflow is called as act and GHES understand ------


def test_archive_uploads_end_with_an_index_job(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    jobs = flows["relforge-linux-archive.yml"]["jobs"]
    assert jobs["index"]["needs"] == ["build-1"]
    assert (
        jobs["index"]["concurrency"]["group"]
        == flows["relforge-linux-wheel.yml"]["jobs"]["index"]["concurrency"]["group"]
    )  # one channel's pages are written by one job at a time


def test_the_reusable_workflow_is_called_by_its_documented_path(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    callers = [j for w in flows.values() for j in w["jobs"].values() if "uses" in j]
    assert callers and {j["uses"] for j in callers} == {"./.github/workflows/relforge-build.yml"}


# --- release day ----------------------------------------------------------------------------------


def test_the_promote_workflow_is_dispatched_and_dry_by_default(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    promote = flows["relforge-promote.yml"]
    inputs = promote["on"]["workflow_dispatch"]["inputs"]
    assert set(promote["on"]) == {"workflow_dispatch"}
    assert inputs["execute"] == {
        "description": "Copy and re-index (default only prints the plan)",
        "type": "boolean",
        "default": False,
    }
    assert inputs["from"]["options"] == ["test", "nightly"]
    assert inputs["to"]["options"] == ["release", "test"]
    assert "concurrency" not in promote  # the store's writer lease serialises it: no lost run
    (step,) = [s for _j, s in steps(promote) if s.get("name", "").startswith("Promote")]
    assert 'if [ "$EXECUTE" = true ]; then set -- "$@" --execute; fi' in step["run"]
    assert "${{" not in step["run"]


def test_the_pypi_workflow_uploads_from_a_protected_environment(in_tmp: Path, run: Run) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    jobs = flows["relforge-pypi.yml"]["jobs"]
    assert jobs["upload"]["needs"] == "stage" and jobs["upload"]["environment"] == "pypi"
    assert "environment" not in jobs["stage"]
    (upload,) = [s for s in jobs["upload"]["steps"] if s.get("name", "").startswith("Upload")]
    assert upload["env"]["TWINE_PASSWORD"] == "${{ secrets.PYPI_API_TOKEN }}"
    (stage,) = [s for s in jobs["stage"]["steps"] if s.get("name", "").startswith("Stage")]
    assert "TWINE_PASSWORD" not in stage.get("env", {})  # the token reaches one job only
    no_default = _matrix(("    pypi_default:\n      linux-x86_64: cpu\n", ""))
    result, root = _generate(in_tmp / "b", run, no_default)
    assert result.code == 0, result.err
    assert not (root / OUT / "relforge-pypi.yml").exists()
    assert "relforge-pypi.yml: no cell of the release is a PyPI default" in result.err


def test_the_bot_calls_relforge_by_its_path_without_touching_github_path(
    in_tmp: Path, run: Run
) -> None:
    flows = _rendered(in_tmp, run, _matrix())
    bot = flows["relforge-bot.yml"]
    scripts = [s["run"] for _j, s in steps(bot) if "run" in s]
    assert not any("GITHUB_PATH" in script for script in scripts)  # an outsider's event starts it
    assert any('"$RUNNER_TEMP/relforge-bin/relforge" bot handle' in script for script in scripts)
