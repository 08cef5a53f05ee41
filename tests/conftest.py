"""Shared test helpers: a small valid matrix, and running the CLI in-process."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from relforge.cli import main
from tests import fakegithub

# fixtures shared by several test files, kept beside the helpers they use; tests.daemons stops
# every server the suite started when a run ends by a signal, and sweeps a killed run's leftovers
pytest_plugins = ["tests.botworld", "tests.daemons"]

REPO = Path(__file__).resolve().parent.parent
PYTORCH = REPO / "matrix" / "pytorch.yaml"
EXAMPLE = REPO / "matrix" / "example.yaml"

# A small matrix that exercises every section; tests change one thing in it at a time.
SMALL = textwrap.dedent("""\
    schema_version: 1
    project:
      name: demo
      download_url: https://example.org
    channels:
      nightly: {version_scheme: dev-date, prefix: whl/nightly}
      test: {version_scheme: final, prefix: whl/test}
      release: {version_scheme: final, prefix: whl}
    releases:
      "1.0":
        date: 2025-06-01
        python: ["3.11", "3.12", "3.13t"]
        platforms:
          linux-x86_64:
            os: linux
            arch: x86_64
            platform_tag: manylinux_2_28_x86_64
          windows-x86_64:
            os: windows
            arch: x86_64
            platform_tag: win_amd64
            cxx11_abi: false
        accelerators:
          cpu:
            kind: cpu
            platforms:
              linux-x86_64: {image: "img:cpu"}
              windows-x86_64: {}
          cu128:
            kind: cuda
            version: 12.8.1
            cudnn: 9.10.2.21
            extra_install_requires:
              - "nvidia-cudnn-cu12==9.10.2.21; platform_system == 'Linux'"
            platforms:
              linux-x86_64: {image: "img:cuda12.8"}
              windows-x86_64: {bundle_libraries: true}
        pypi_default:
          linux-x86_64: cu128
          windows-x86_64: cpu
        libtorch:
          platforms: [linux-x86_64]
          accelerators: [cpu, cu128]
          variants: [shared-with-deps, static-with-deps]
        exclude:
          - match: {platform: windows-x86_64, python: "3.13t"}
            reason: no free-threaded Windows build yet
        include:
          - match: {platform: linux-x86_64, python: "3.12", variant: cu128}
            suffix: full
            set: {bundle_libraries: true, upload_subfolder: "{variant}_full", root_index: false}
            reason: a wheel that bundles its CUDA libraries (the variant's file name)
      "1.1":
        extends: "1.0"
        date: 2025-12-01
        python: ["3.12", "3.13", "3.13t", "3.14"]
        accelerators:
          cu130:
            kind: cuda
            version: 13.0.0
            status: experimental
            platforms:
              linux-x86_64: {}
        include: []
    """)


@dataclass
class Result:
    code: int
    out: str
    err: str


Run = Callable[..., Result]


class Write(Protocol):
    """The `write` fixture: put a matrix text in a file under tmp_path, return its path."""

    def __call__(self, text: str, name: str = ...) -> Path: ...


@pytest.fixture(autouse=True)
def _not_in_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see the same output wherever they run: when the suite itself runs in GitHub Actions,
    relforge would add workflow commands to its output and append to the job's step summary."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run `relforge ARGS…` in-process; returns exit code, stdout and stderr."""

    def invoke(*args: str) -> Result:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write a matrix text to a file in tmp_path and return its path."""

    def writer(text: str, name: str = "matrix.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return writer


@pytest.fixture
def fake_github(monkeypatch: pytest.MonkeyPatch) -> Iterator[fakegithub.FakeGitHub]:
    """A stateful stand-in for GitHub's REST API; GITHUB_TOKEN and GITHUB_API_URL point at it."""
    fake, server, thread = fakegithub.start()
    monkeypatch.setenv("GITHUB_TOKEN", fakegithub.TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# `make test` hands whole files to its workers (pytest-xdist --dist loadfile) in collection
# order (the Makefile turns off xdist's own reordering, which puts the files with the most tests
# first and so left the longest single-test files for the end, one worker busy while the others
# idled).  The longest files go first — longest-processing-time first; order within a file
# stays.  Seconds: each file's sum of test durations in a full `make test` on the 2-core machine
# shared with another engineer's tests (load average 6-10), 25b206f (benchmarks/results/
# test_suite.json); a file missing here only runs later.  The act scenarios are the longest
# file: one worker runs them from start to end, so they start first.
LONGEST_FIRST = (
    # 886 s at 25b206f; alone, load ~5: 471 s wall, 423 CPU-s (containers included) before
    # the runner's file index, 2 CI Pythons, 1 CUDA arch and the push in the background; 330 s,
    # 382 CPU-s after (its act jobs' step time 854 -> 456 s)
    "test_generated_ci.py",  # act runs every generated workflow
    "test_build_docker.py",  # 732 s: the torch extension in a container 372 s; alone, 2c626c1
    # (load 3-5): 320 s, torch 99 s (its runtime checks and install, not the compile now)
    "test_real_projects.py",  # 331 s: projects from init to installed on the host; alone,
    # 2c626c1 (load 4-5): 148 s, 85 CPU-s, torch 67 s (its compile 22 -> 5 CPU-s)
    "test_deps_closure.py",  # 136 s
    "test_mirrors.py",
    "test_s3_multipart.py",
    "test_workflows_lint.py",
    "test_abi3_project.py",  # 95 s: three host builds, runtime on three Pythons
    "test_numpy_abi.py",
    "test_build_host.py",
    "test_wheel_memory.py",
    "test_s3_fault_kinds.py",
    "test_yank.py",
    "test_promote_flow.py",
    "test_whole_release.py",
    "test_workflows_generate.py",
    "test_s3_transient_faults.py",
    "test_index_pagesets.py",
    "test_index_race.py",  # 50 s: writer processes started together, local store and moto
    "test_concurrent_writers.py",  # 2 and 8 leased writers, a SIGKILLed holder taken over
    "test_docs_walk.py",  # 80 s: README's and the CUDA walk's commands, as written
    "test_lease_s3.py",
    "test_verify.py",
    "test_pypi_preflight.py",
    "test_bot_handler.py",
    "test_bot_attacks.py",
    "test_archives_ship.py",
    "test_example_release_flow.py",
    "test_site_browser.py",
    "test_root_index.py",
    "test_promote_resume.py",
    "test_promote_local.py",
    "test_fuzz_loader.py",
    "test_runtime_truth.py",  # 25 s: real venvs and pip, two Pythons
    "test_promote_tamper_s3.py",  # 22 s
    "test_test_daemons.py",  # 15-20 s: child pytest runs that start servers and are killed
    "test_network_faults.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable within a file
