"""`--format json` of `yank`, `pypi stage`, `pypi upload` and `upstream update`, checked against
what they planned and changed: the local store's files and pages, pypiserver's packages, the
matrix file and the pull request of the GitHub double.  Stdout holds the one JSON document (the
lines people read go to stderr); a dry run and a run have one shape, `executed` says which."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.fakegithub import FakeGitHub
from tests.gitrepos import make_repos
from tests.integration.conftest import PyPIServer
from tests.integration.test_upstream import AFTER, EXT, index, moves
from tests.integration.test_verify_local import release as promoted_release
from tests.upstream_index import LocalIndex

pytestmark = pytest.mark.slow
Run = Callable[..., Result]
__all__ = ["index"]  # the upstream index fixture of test_upstream, used here by name


def _json(result: Result) -> dict[str, Any]:
    assert result.code == 0, result.err
    document = json.loads(result.out)  # stdout is the document and nothing else
    assert isinstance(document, dict) and next(iter(document)) == "schema_version", document
    assert document["schema_version"] == 1
    return document


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def promoted(tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> Path:
    """1.0.0 published to the test channel and promoted to release, in the local store."""
    monkeypatch.chdir(tmp_path)
    return promoted_release(tmp_path, run)


def test_yank_json_is_the_plan_then_what_was_done(
    tmp_path: Path, run: Run, promoted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / ".relforge" / "store"
    wheels = sorted(
        p.relative_to(store).as_posix() for p in (store / "whl").rglob("rfdemo-1.0.0+*.whl")
    )
    assert wheels  # both channels hold the version's wheels
    args = ("yank", str(promoted), "--version", "1.0.0", "--reason", "broken ABI", "--format")

    dry = run(*args, "json")
    plan = _json(dry)
    assert "dry run: nothing was written" in dry.err and "yank 1.0.0 in" in dry.err
    assert plan["command"] == "yank" and plan["version"] == "1.0.0"
    assert plan["executed"] is False and plan["done"] is None
    assert sorted(f["key"] for f in plan["files"]) == wheels
    assert {f["channel"] for f in plan["files"]} == {"test", "release"}
    assert all(f["before"] is None and f["after"] == "broken ABI" for f in plan["files"])
    folders = {key.rsplit("/", 1)[0] for key in wheels}
    assert {folder for fs in plan["folders"].values() for folder in fs} == folders
    assert not any("data-yanked" in p.read_text() for p in store.rglob("index.html"))

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    done = _json(run(*args, "json", "--execute"))
    assert done["executed"] is True and done["files"] == plan["files"]
    assert done["done"] == {
        "files_changed": len(wheels),
        "folders_written": len(folders),
        "already_in_place": False,
    }
    for key in wheels:  # each page now says so
        folder, filename = key.rsplit("/", 1)
        page = json.loads((store / folder / "rfdemo" / "index.json").read_text())
        assert {f["filename"]: f.get("yanked") for f in page["files"]}[filename] == "broken ABI"
    markdown = summary.read_text()
    assert markdown.startswith(f"### relforge yank\n\nyank 1.0.0: {len(wheels)} file(s) changed")
    assert all(f"`{key}` → yanked: broken ABI" in markdown for key in wheels)

    again = _json(run(*args, "json", "--execute"))
    assert all(f["changed"] is False for f in again["files"])
    assert again["done"]["already_in_place"] is True


def _pypi_default(store: Path) -> dict[str, str]:
    """The staged file name → sha256 of each wheel in the store's PyPI staging folder."""
    staging = store / "pypi-staging" / "1.0.0"
    return {p.name: _sha256(p) for p in staging.glob("*.whl")} if staging.exists() else {}


def test_pypi_stage_json_names_each_staged_file_with_its_sha256(
    tmp_path: Path, run: Run, promoted: Path
) -> None:
    store = tmp_path / ".relforge" / "store"
    args = ("pypi", "stage", str(promoted), "--version", "1.0.0", "--format", "json")
    dry = run(*args)
    planned = _json(dry)
    assert "PyPI pre-flight:" in dry.err and "dry run: nothing was written" in dry.err
    assert planned["executed"] is False and planned["created"] is None
    assert _pypi_default(store) == {}  # the dry run wrote nothing
    files = planned["files"]
    assert [f["present"] for f in files] == [False] * len(files)
    for f in files:  # each from the release channel, its local version label stripped
        assert f["source"].startswith("whl/") and "+" in f["source"]
        assert f["staged"] == f"pypi-staging/1.0.0/{f['filename']}" and "+" not in f["filename"]

    done = _json(run(*args, "--execute"))
    assert done["executed"] is True and done["created"] == len(files)
    staged = _pypi_default(store)
    assert {f["filename"]: f["sha256"] for f in done["files"]} == staged
    assert {f["filename"]: f["size"] for f in done["files"]} == {
        name: (store / "pypi-staging" / "1.0.0" / name).stat().st_size for name in staged
    }

    again = _json(run(*args, "--execute"))
    assert again["created"] == 0 and all(f["present"] for f in again["files"])


def test_pypi_upload_json_says_what_the_index_received(
    tmp_path: Path,
    run: Run,
    promoted: Path,
    pypiserver: PyPIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert run("pypi", "stage", str(promoted), "--version", "1.0.0", "--execute").code == 0
    staged = _pypi_default(tmp_path / ".relforge" / "store")
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    args: tuple[str, ...] = ("pypi", "upload", str(promoted), "--version", "1.0.0")
    args += ("--repository-url", pypiserver.url, "--format", "json")

    dry = run(*args)
    planned = _json(dry)
    assert "dry run: nothing was uploaded" in dry.err
    assert planned["repository"] == pypiserver.url and planned["index"] == pypiserver.simple
    assert planned["executed"] is False and planned["uploaded"] is None
    assert {f["filename"]: (f["sha256"], f["state"]) for f in planned["files"]} == {
        name: (sha, "upload") for name, sha in staged.items()
    }
    assert list(pypiserver.packages.iterdir()) == []

    done = run(*args, "--execute")
    uploaded = _json(done)
    assert pypiserver.password not in done.out + done.err
    assert "Uploading distributions to" in done.err  # what twine prints, kept off stdout
    assert uploaded["executed"] is True and uploaded["uploaded"] == len(staged)
    received = {p.name: _sha256(p) for p in pypiserver.packages.iterdir()}
    assert received == staged

    again = _json(run(*args, "--execute"))
    assert again["uploaded"] == 0
    assert {f["filename"]: (f["state"], f["found"]) for f in again["files"]} == {
        name: ("identical", sha) for name, sha in staged.items()
    }


def test_upstream_update_json_carries_each_change_the_diff_and_the_file_written(
    tmp_path: Path, run: Run, index: LocalIndex
) -> None:
    matrix = tmp_path / "ext.yaml"
    matrix.write_text(EXT, encoding="utf-8")
    moves(index)
    args: tuple[str, ...] = (
        "upstream",
        "update",
        str(matrix),
        "--index-url",
        index.url,
        "--date",
        AFTER,
    )
    args += ("--format", "json")

    dry = run(*args)
    planned = _json(dry)
    assert matrix.read_text() == EXT and "dry run: nothing was written" in dry.err
    assert planned["file"] == str(matrix) and planned["release"] == "0.5"
    assert planned["index"] == index.url and planned["policy_date"] == AFTER
    assert planned["executed"] is False and planned["wrote"] is None
    changes = {(c["kind"], c["message"].split(" (")[0]) for c in planned["changes"]}
    assert ("pin-changed", "nvidia-nvshmem-cu12 3.3.20 → 3.4.5") in changes
    assert ("axis-new", "torch 2.10.0 is out") in {(k, m[:19]) for k, m in changes}
    assert all(c["writes"] and c["due"] for c in planned["changes"])
    nvshmem = next(c for c in planned["changes"] if c["subject"] == "nvidia-nvshmem-cu12")
    assert nvshmem["source"]["file"] == "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert [m["subject"] for m in planned["manual"]] == ["numpy"]
    assert planned["pull_request"] is None

    done = _json(run(*args, "--execute"))
    assert done["executed"] is True and done["wrote"] == str(matrix)
    assert done["changes"] == planned["changes"] and len(done["changes"]) == 4
    written = matrix.read_text()
    name = str(matrix).lstrip("/")
    diff = difflib.unified_diff(
        EXT.splitlines(keepends=True),
        written.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    assert planned["diff"] == done["diff"] == "".join(diff) != ""  # what was written

    again = _json(run(*args, "--execute"))
    assert again["changed"] is False and again["diff"] == "" and again["wrote"] is None
    assert matrix.read_text() == written


def test_upstream_update_json_names_the_pull_request(
    tmp_path: Path, run: Run, index: LocalIndex, fake_github: FakeGitHub
) -> None:
    repos = make_repos(tmp_path, {"matrix/ext.yaml": EXT})
    fake_github.repo("acme/torchext")
    moves(index)
    args: tuple[str, ...] = (
        "upstream",
        "update",
        str(repos.clone / "matrix" / "ext.yaml"),
        "--date",
        AFTER,
    )
    args += ("--index-url", index.url, "--pull-request", "--github-repo", "acme/torchext")
    args += ("--format", "json")
    branch = "relforge/upstream/matrix-ext/0.5"

    planned = _json(run(*args))["pull_request"]
    assert planned["action"] == "open" and planned["branch"] == branch and planned["base"] == "main"
    assert planned["number"] is None and planned["pushed"] is False
    assert fake_github.writes() == []

    opened = _json(run(*args, "--execute"))
    pull = fake_github.repo("acme/torchext").pulls[1]
    assert opened["executed"] is True and opened["wrote"] is None
    assert opened["pull_request"] == {
        "action": "open",
        "repo": "acme/torchext",
        "branch": branch,
        "base": "main",
        "title": pull["title"],
        "pushed": True,
        "number": 1,
        "url": pull["html_url"],
    }

    again = _json(run(*args, "--execute"))["pull_request"]
    assert again["action"] == "current" and again["number"] == 1 and again["pushed"] is False
