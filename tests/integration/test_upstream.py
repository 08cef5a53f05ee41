"""`relforge upstream check` and `update` against a local upstream index served over HTTP (PEP 691
pages, PEP 658 metadata, range requests): a new torch with the real METADATA PyPI serves for it,
a new numpy, a yanked version, a CUDA 13 torch; the edits written in place, refusals, faults."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from relforge.matrix.lint import lint_matrix
from relforge.matrix.load import load_matrix
from tests.conftest import PYTORCH, Result
from tests.fakegithub import FakeGitHub
from tests.gitrepos import Repos, git, make_repos
from tests.integration.conftest import free_port
from tests.upstream_index import (
    DATA,
    IndexFile,
    LocalIndex,
    numpy_release,
    recorded,
    serve_index,
    torch_release,
    wheel_bytes,
)

Run = Callable[..., Result]
EXT = (DATA / "ext.yaml").read_text(encoding="utf-8")
BEFORE = "2026-06-01"  # no CPython released or past end of life since the matrix was written
AFTER = "2026-11-30"  # 3.10 past end of life (2026-10-31), 3.15 released (2026-10-01)
NVIDIA = {
    "nvidia-cudnn-cu12": ["9.10.2.21"],
    "nvidia-nvshmem-cu12": ["3.3.20"],
    "nvidia-cudnn-cu13": ["9.13.0.50"],
    "nvidia-nccl-cu13": ["2.27.7"],
    "triton": ["3.5.0"],
}


def pins(index: LocalIndex, name: str, *versions: str) -> None:
    wheel = name.replace("-", "_")
    index.listing(name, *(f"{wheel}-{v}-py3-none-manylinux_2_28_x86_64.whl" for v in versions))


@pytest.fixture
def index() -> Iterator[LocalIndex]:
    """The upstream as the matrix was written against it: torch 2.8 and 2.9, numpy 1.26.4 and
    2.3.0, the pinned nvidia-* and triton versions."""
    local = LocalIndex()
    torch_release(local, "2.8.0")
    torch_release(local, "2.9.0")
    numpy_release(local, "1.26.4", ("310", "311", "312"))
    numpy_release(local, "2.3.0", ("311", "312", "313", "314"))
    for name, versions in NVIDIA.items():
        pins(local, name, *versions)
    with serve_index(local):
        yield local


def moves(index: LocalIndex) -> None:
    """Upstream moves: torch 2.10.0 (CUDA 12.8, new nvshmem and triton pins), numpy 2.4.0, and
    numpy 1.26.4 yanked."""
    torch_release(index, "2.10.0")
    numpy_release(index, "2.4.0", ("311", "312", "313", "314"))
    for file in index.projects["numpy"]:
        if "1.26.4" in file.filename:
            file.yanked = "broken wheels, use 1.26.5"
    pins(index, "nvidia-nvshmem-cu12", "3.4.5")
    pins(index, "triton", "3.6.0")


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    path = tmp_path / "ext.yaml"
    path.write_text(EXT, encoding="utf-8")
    return path


def check(run: Run, matrix: Path, index: LocalIndex, *extra: str) -> tuple[Result, dict[str, Any]]:
    args = ("upstream", "check", str(matrix), "--index-url", index.url, "--format", "json")
    result = run(*args, *extra)
    return result, json.loads(result.out) if result.out.strip() else {}


def kinds(report: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(f["kind"], f["subject"], f["due"]) for f in report["findings"]]


def test_a_matrix_written_against_the_index_is_current(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    result, report = check(run, matrix, index, "--date", BEFORE)
    assert result.code == 0, result.err
    assert report["version"] == 1 and report["due"] == 0
    assert [f["kind"] for f in report["findings"]] == ["axis-covered"] * 4
    # the pins were compared with torch 2.9.0's real METADATA (cu128) and not with 2.8.0's,
    # which pins the same cu128 libraries; nothing stands for cu130 (no torch pins CUDA 13 yet)
    assert [(c["file"], c["variants"], c["pins"], c["differing"]) for c in report["compared"]] == [
        ("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl", ["cu128"], 3, 0)
    ]


def test_check_reports_the_new_torch_the_new_numpy_and_the_yanked_version(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    moves(index)
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4, result.err
    assert "5 change(s) due (4 written by `relforge upstream update`, 1 by hand)" in result.err
    assert kinds(report) == [
        ("axis-new", "torch", True),
        ("pin-changed", "nvidia-nvshmem-cu12", True),
        ("pin-changed", "triton", True),
        ("python-eol", "Python 3.10", True),
        ("axis-gone", "numpy", True),
        ("python-waiting", "Python 3.15", False),
        ("axis-covered", "torch", False),
        ("axis-covered", "torch", False),
        ("axis-covered", "numpy", False),
    ]
    found = {(f["kind"], f["subject"]): f for f in report["findings"]}
    new = found["axis-new", "torch"]
    assert new["upstream"] == "2.10.0" and new["writes"]
    nvshmem = found["pin-changed", "nvidia-nvshmem-cu12"]
    assert (nvshmem["current"], nvshmem["upstream"]) == ("3.3.20", "3.4.5")
    assert nvshmem["source"] == {
        "file": "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "sha256": IndexFile("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl").sha256,
        "line": 'Requires-Dist: nvidia-nvshmem-cu12==3.4.5; platform_system == "Linux" and '
        'platform_machine == "x86_64"',
    }
    assert found["pin-changed", "triton"]["upstream"] == "3.6.0"
    yanked = found["axis-gone", "numpy"]
    assert "1.26.4) is yanked: broken wheels, use 1.26.5" in yanked["message"]
    assert yanked["manual"] and not yanked["writes"]
    waiting = found["python-waiting", "Python 3.15"]["message"]
    # every value's torch and numpy must ship it (a torch 2.8 cell would be built on 3.15 too)
    assert "torch 2.10.0, torch 2.9.0, torch 2.8.0 and numpy 2.4.0 have no cp315 wheel" in waiting
    numpy = [
        f for f in report["findings"] if f["kind"] == "axis-covered" and f["subject"] == "numpy"
    ]
    assert numpy[0]["upstream"] == "2.4.0"  # the new numpy: 2.x builds with it, no value needed
    text = run("upstream", "check", str(matrix), "--index-url", index.url, "--date", AFTER)
    assert text.code == 4
    assert "DUE   axis-new         torch 2.10.0 is out: axis torch has no value for it" in text.out
    assert "source: torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl (sha256 " in text.out


def edited(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


AFTER_210 = (
    (
        '    python: ["3.10", "3.11", "3.12", "3.13", "3.14"]   # every CPython torch ships',
        '    python: ["3.11", "3.12", "3.13", "3.14"]           # every CPython torch ships',
    ),
    ("nvidia-nvshmem-cu12==3.3.20;", "nvidia-nvshmem-cu12==3.4.5;"),
    ('add: ["triton==3.5.0;', 'add: ["triton==3.6.0;'),
    (
        '          requires: ["torch==2.9.*"]   # one torch minor per wheel\n',
        '          requires: ["torch==2.9.*"]   # one torch minor per wheel\n'
        '        "2.10":\n'
        '          install: ["torch==2.10.*"]\n'
        '          requires: ["torch==2.10.*"]\n',
    ),
)


def update(run: Run, matrix: Path, index: LocalIndex, *extra: str) -> Result:
    args = ("upstream", "update", str(matrix), "--index-url", index.url, "--date", AFTER)
    return run(*args, *extra)


def test_update_writes_the_edits_in_place_and_a_rerun_is_a_no_op(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    moves(index)
    dry = update(run, matrix, index)
    assert dry.code == 0, dry.err
    assert matrix.read_text() == EXT  # a dry run writes nothing
    assert "dry run: nothing was written; add --execute to apply" in dry.out
    diff = dry.out[dry.out.index("--- a/") :]
    assert '-    python: ["3.10", "3.11", "3.12", "3.13", "3.14"]   # every CPython' in diff
    assert '+        "2.10":\n+          install: ["torch==2.10.*"]\n' in diff
    assert "  write    nvidia-nvshmem-cu12 3.3.20 → 3.4.5" in dry.out
    assert "  by hand  axis numpy=1.26: every numpy version it admits (1.26.4) is yanked" in dry.out

    done = update(run, matrix, index, "--execute")
    assert done.code == 0, done.err
    assert "wrote " in done.out and ": 4 change(s)" in done.out
    # exactly these lines changed; every comment, quote and blank line is as it was
    assert matrix.read_text() == edited(EXT, *AFTER_210)
    loaded = load_matrix(matrix)
    assert [f.rule.id for f in lint_matrix(loaded)] == ["RF-L006"]  # as before: no date
    assert list(loaded.release("0.5").axes["torch"]) == ["2.8", "2.9", "2.10"]

    again = update(run, matrix, index, "--execute")
    assert again.code == 0, again.err
    assert "nothing to write" in again.out and "wrote" not in again.out
    assert matrix.read_text() == edited(EXT, *AFTER_210)
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4  # the yanked numpy is left to a person
    assert [f["kind"] for f in report["findings"] if f["due"]] == ["axis-gone"]


def test_a_cuda_13_torch_moves_the_cu130_pins_and_the_keys_that_follow_them(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    moves(index)
    assert update(run, matrix, index, "--execute").code == 0
    # torch 2.11.0 on PyPI is CUDA 13.0 (its METADATA pins cuda-toolkit 13.0.2, cuDNN for CUDA 13)
    torch_release(index, "2.11.0")
    pins(index, "nvidia-cudnn-cu13", "9.19.0.56")
    pins(index, "nvidia-nccl-cu13", "2.28.9")
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4
    changed = {f["subject"]: f for f in report["findings"] if f["kind"] == "pin-changed"}
    assert sorted(changed) == ["nvidia-cudnn-cu13", "nvidia-nccl-cu13"]
    assert changed["nvidia-cudnn-cu13"]["source"]["line"] == (
        'Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"'
    )
    # cu128 follows torch 2.10.0, the newest torch that stands for CUDA 12.8; cu130 follows 2.11.0
    assert [
        (c["file"].split("-cp")[0], c["variants"], c["differing"]) for c in report["compared"]
    ] == [
        ("torch-2.11.0", ["cu130"], 2),
        ("torch-2.10.0", ["cu128"], 0),
    ]
    assert update(run, matrix, index, "--execute").code == 0
    assert matrix.read_text() == edited(
        EXT,
        *AFTER_210[:3],
        (
            AFTER_210[3][0],
            AFTER_210[3][1] + '        "2.11":\n'
            '          install: ["torch==2.11.*"]\n'
            '          requires: ["torch==2.11.*"]\n',
        ),
        ("cudnn: 9.13.0.50", "cudnn: 9.19.0.56"),
        ("nccl: 2.27.7", "nccl: 2.28.9"),
        ("nvidia-cudnn-cu13==9.13.0.50;", "nvidia-cudnn-cu13==9.19.0.56;"),
        ("nvidia-nccl-cu13==2.27.7;", "nvidia-nccl-cu13==2.28.9;"),
    )


TWO_RELEASES = """\
schema_version: 1
project: {name: torchext}
releases:
  "0.4":
    python: ["3.12", "3.13", "3.14"]
    local_label: "+{variant}.torch{torch}"
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cu128:
        kind: cuda
        version: 12.8.1
        cudnn: 9.8.0.87
        extra_install_requires: ["nvidia-cudnn-cu12==9.8.0.87; platform_system == 'Linux'"]
        platforms: {linux-x86_64: {}}
    axes:
      torch:
        "2.7": {install: ["torch==2.7.*"], requires: ["torch==2.7.*"]}
  "0.5":
    extends: "0.4"
    accelerators:
      cu128:
        extra_install_requires: ["nvidia-cudnn-cu12==9.8.0.87; platform_system == 'Linux'"]
    axes:
      torch:
        "2.9": {install: ["torch==2.9.*"], requires: ["torch==2.9.*"]}
"""


def test_a_pin_that_would_contradict_an_inherited_cudnn_key_is_refused(
    run: Run, tmp_path: Path, index: LocalIndex
) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(TWO_RELEASES, encoding="utf-8")
    result, report = check(run, path, index, "--date", BEFORE)
    assert result.code == 4
    conflict = next(f for f in report["findings"] if f["kind"] == "pin-conflict")
    lines = TWO_RELEASES.splitlines()
    pin = max(n for n, line in enumerate(lines, 1) if "nvidia-cudnn-cu12==" in line)
    cudnn = next(n for n, line in enumerate(lines, 1) if "cudnn: 9.8.0.87" in line)
    # both lines named: the pin of 0.5 and the `cudnn:` it inherits from 0.4
    assert f"{path}:{pin}:" in conflict["message"] and f"{path}:{cudnn}:" in conflict["message"]
    assert "contradicts `cudnn: 9.8.0.87`" in conflict["message"]
    refused = run("upstream", "update", str(path), "--index-url", index.url, "--date", BEFORE)
    assert refused.code == 5
    assert "would contradict the matrix; nothing was written" in refused.err
    assert f"{path}:{pin}:" in refused.err and f"{path}:{cudnn}:" in refused.err
    assert "hint: write `cudnn: 9.10.2.21` under releases.0.5.accelerators.cu128" in refused.err
    assert path.read_text() == TWO_RELEASES


def test_a_cudnn_key_in_the_same_variant_moves_with_its_pin(
    run: Run, tmp_path: Path, index: LocalIndex
) -> None:
    path = tmp_path / "two.yaml"
    own = "      cu128:\n        extra_install_requires:"  # release 0.5's variant
    text = edited(
        TWO_RELEASES,
        (own, "      cu128:\n        cudnn: 9.8.0.87  # ours\n" + own.split("\n", 1)[1]),
    )
    path.write_text(text, encoding="utf-8")
    args = ("upstream", "update", str(path), "--index-url", index.url, "--date", BEFORE)
    assert run(*args, "--execute").code == 0
    head, _, tail = text.rpartition("nvidia-cudnn-cu12==9.8.0.87")  # 0.5's pin; 0.4 keeps its own
    expected = edited(
        head + "nvidia-cudnn-cu12==9.10.2.21" + tail,
        ("cudnn: 9.8.0.87  # ours", "cudnn: 9.10.2.21 # ours"),  # the comment keeps its column
    )
    assert path.read_text() == expected


def moves_without_metadata_files(index: LocalIndex, *, padding: int) -> tuple[str, bytes]:
    """Upstream moves, but torch 2.10.0's one wheel is offered as bytes only (a real zip around
    its recorded METADATA, `padding` stored bytes in front): no PEP 658 file."""
    moves(index)
    index.projects["torch"] = [f for f in index.projects["torch"] if "2.10.0" not in f.filename]
    name = "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    body = wheel_bytes(name, recorded(f"{name}.metadata"), padding=padding)
    torch_release(index, "2.10.0", ("312",), metadata=False, body=body)
    return name, body


def test_metadata_is_read_by_range_requests_when_the_index_offers_no_file(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    name, body = moves_without_metadata_files(index, padding=4 << 20)
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4, result.err
    assert report["compared"][0]["via"] == "range requests"
    assert [f["subject"] for f in report["findings"] if f["kind"] == "pin-changed"] == [
        "nvidia-nvshmem-cu12",
        "triton",
    ]
    # the end of the zip only: not the 4 MiB in front of the METADATA
    assert index.served[f"/files/{name}"] < len(body) // 8


def test_a_wheel_whose_metadata_cannot_be_read_is_named_and_skipped(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    name, _ = moves_without_metadata_files(index, padding=0)
    index.ranges = False
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4
    skipped = [f for f in report["findings"] if f["kind"] == "metadata-skipped"]
    assert [f["subject"] for f in skipped] == [name]
    assert "does not answer range requests (HTTP 200" in skipped[0]["message"]
    # never guessed: not compared with an older torch's pins either
    assert not [f for f in report["findings"] if f["kind"].startswith("pin-")]
    assert report["compared"] == []


def test_an_unreachable_index_is_an_environment_fault_naming_the_host(
    run: Run, matrix: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/simple/"
    for command in ("check", "update"):
        result = run("upstream", command, str(matrix), "--index-url", url)
        assert result.code == 6, result.err
        assert "cannot reach the index host 127.0.0.1" in result.err
        assert "Traceback" not in result.err
    assert matrix.read_text() == EXT
    bad = run("upstream", "check", str(matrix), "--index-url", "file:///srv/simple/")
    assert bad.code == 2 and "--index-url: file:///srv/simple/ is not an http(s) URL" in bad.err


def test_an_html_only_index_reads_the_same(run: Run, matrix: Path, index: LocalIndex) -> None:
    moves(index)
    _, as_json = check(run, matrix, index, "--date", AFTER)
    index.json_pages = False
    result, as_html = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4
    assert as_html["findings"] == as_json["findings"]  # yanked and PEP 658 data from HTML too


def test_pytorch_matrix_matches_pypi_torch_2_9_0(run: Run) -> None:
    """matrix/pytorch.yaml against the METADATA PyPI serves for torch 2.9.0 (recorded): the 15
    nvidia-* pins of cu128 and triton (a runtime_requires rule) agree; nothing is due."""
    local = LocalIndex()
    torch_release(local, "2.9.0", ("310", "311", "312", "313", "314"))
    loaded = load_matrix(PYTORCH)
    release = loaded.release("2.9")
    pinned = {
        (text.split("==")[0], text.split("==")[1].split(";")[0])
        for variant in release.accelerators.values()
        for text in variant.extra_install_requires
    }
    for name, version in {*pinned, ("triton", "3.5.0")}:
        pins(local, name, version)
    with serve_index(local):
        args = ("upstream", "check", str(PYTORCH), "--index-url", local.url, "--format", "json")
        result = run(*args)
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["release"] == "2.9" and report["policy_date"] == "2025-10-15"
    assert report["findings"] == []
    assert report["compared"] == [
        {
            "file": "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "sha256": IndexFile("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl").sha256,
            "via": "PEP 658",
            "variants": ["cu128"],
            "pins": 16,
            "differing": 0,
        }
    ]


REPO_NAME = "acme/torchext"


def pull_request(run: Run, repos: Repos, index: LocalIndex, *extra: str) -> Result:
    matrix = str(repos.clone / "matrix" / "ext.yaml")
    args = ("--index-url", index.url, "--date", AFTER, "--pull-request", "--github-repo", REPO_NAME)
    return run("upstream", "update", matrix, *args, *extra)


def test_pull_request_is_opened_once_and_updated_when_upstream_moves_again(
    run: Run, tmp_path: Path, index: LocalIndex, fake_github: FakeGitHub
) -> None:
    repos = make_repos(tmp_path, {"matrix/ext.yaml": EXT})
    fake_github.repo(REPO_NAME)
    head = git(repos.clone, "rev-parse", "HEAD")
    branch = "relforge/upstream/matrix-ext/0.5"
    moves(index)

    dry = pull_request(run, repos, index)
    assert dry.code == 0, dry.err
    assert f"pull request: push {branch} and open a pull request" in dry.out
    assert "dry run: nothing was pushed; add --execute to push and open it" in dry.out
    assert fake_github.writes() == []
    assert git(repos.origin, "branch", "--list", "relforge/*") == ""

    opened = pull_request(run, repos, index, "--execute")
    assert opened.code == 0, opened.err
    pulls = fake_github.repo(REPO_NAME).pulls
    assert list(pulls) == [1] and "pull request #1:" in opened.out
    pull = pulls[1]
    assert pull["head"]["ref"] == branch and pull["base"]["ref"] == "main"
    assert pull["title"] == (
        "Follow upstream in matrix/ext.yaml 0.5: torch 2.10.0, 2 pin(s), Python -3.10"
    )
    body = pull["body"]
    nvshmem = (
        "- **pin-changed** nvidia-nvshmem-cu12 3.3.20 → 3.4.5 "
        "(releases.0.5.accelerators.cu128.extra_install_requires[1]), as "
        "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl declares\n"
        "  - source: `torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl`, sha256 `"
        + IndexFile("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl").sha256
        + '`, METADATA line `Requires-Dist: nvidia-nvshmem-cu12==3.4.5; platform_system == "Linux" '
        'and platform_machine == "x86_64"`'
    )
    assert nvshmem in body
    assert "- **axis-new** torch 2.10.0 is out" in body
    eol = "- **python-eol** Python 3.10 reached end of life on 2026-10-31 (RF-L001 on 2026-11-30)"
    assert eol + '\n  - source: `python_eol.yaml`, line `"3.10": 2026-10-31`\n' in body
    new_torch = "  - source: `torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl`, sha256 `"
    assert new_torch in body  # the axis-new change names the new torch's file
    assert "### Left for a person" in body and "is yanked: broken wheels" in body
    # the branch holds the base plus the edit; the clone is untouched
    pushed = git(repos.origin, "rev-parse", branch)
    assert git(repos.origin, "rev-parse", f"{branch}~1") == head
    assert git(repos.origin, "show", f"{branch}:matrix/ext.yaml") + "\n" == edited(EXT, *AFTER_210)
    assert (repos.clone / "matrix" / "ext.yaml").read_text() == EXT
    assert git(repos.clone, "rev-parse", "HEAD") == head

    writes = len(fake_github.writes())
    again = pull_request(run, repos, index, "--execute")
    assert again.code == 0, again.err
    assert "pull request #1 is open and holds this update: nothing to do" in again.out
    assert list(fake_github.repo(REPO_NAME).pulls) == [1]
    assert len(fake_github.writes()) == writes
    assert git(repos.origin, "rev-parse", branch) == pushed

    torch_release(index, "2.11.0")  # upstream moved again: a CUDA 13 torch
    pins(index, "nvidia-cudnn-cu13", "9.19.0.56")
    pins(index, "nvidia-nccl-cu13", "2.28.9")
    moved = pull_request(run, repos, index, "--execute")
    assert moved.code == 0, moved.err
    assert "push relforge/upstream/matrix-ext/0.5 again and update pull request #1" in moved.out
    assert list(fake_github.repo(REPO_NAME).pulls) == [1]
    assert ("PATCH", f"/repos/{REPO_NAME}/pulls/1") in [w[:2] for w in fake_github.writes()]
    assert (
        "torch 2.11.0" in pulls[1]["title"]
        and "nvidia-cudnn-cu13 9.13.0.50 → 9.19.0.56" in pulls[1]["body"]
    )
    assert git(repos.origin, "rev-parse", f"{branch}~1") == head  # still one commit on the base
    assert "nvidia-cudnn-cu13==9.19.0.56" in git(repos.origin, "show", f"{branch}:matrix/ext.yaml")


def test_pull_request_refuses_uncommitted_changes_and_a_missing_token(
    run: Run,
    tmp_path: Path,
    index: LocalIndex,
    fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repos = make_repos(tmp_path, {"matrix/ext.yaml": EXT})
    moves(index)
    (repos.clone / "matrix" / "ext.yaml").write_text(EXT + "# local edit\n")
    dirty = pull_request(run, repos, index, "--execute")
    assert dirty.code == 2 and "has uncommitted changes" in dirty.err
    (repos.clone / "matrix" / "ext.yaml").write_text(EXT)
    monkeypatch.delenv("GITHUB_TOKEN")
    tokenless = pull_request(run, repos, index, "--execute")
    assert tokenless.code == 2 and "GITHUB_TOKEN" in tokenless.err
    assert fake_github.requests == []


def test_a_released_python_every_dependency_ships_wheels_for_is_added(
    run: Run, matrix: Path, index: LocalIndex
) -> None:
    for version in ("2.8.0", "2.9.0"):
        index.listing("torch", f"torch-{version}-cp315-cp315-manylinux_2_28_x86_64.whl")
    index.listing("numpy", "numpy-1.26.4-cp315-cp315-manylinux_2_28_x86_64.whl")
    result, report = check(run, matrix, index, "--date", BEFORE)
    assert result.code == 0  # 3.15 is not out yet on that day
    index.listing("numpy", "numpy-2.3.0-cp315-abi3-manylinux_2_28_x86_64.whl")  # stable ABI
    result, report = check(run, matrix, index, "--date", AFTER)
    assert result.code == 4
    new = next(f for f in report["findings"] if f["kind"] == "python-new")
    assert new["message"] == (
        "Python 3.15 was released on 2026-10-01; torch 2.9.0, torch 2.8.0, numpy 2.3.0 and "
        "numpy 1.26.4 ship cp315 wheels"
    )
    assert update(run, matrix, index, "--execute").code == 0
    assert '    python: ["3.11", "3.12", "3.13", "3.14", "3.15"]   # every CPython' in (
        matrix.read_text()
    )
