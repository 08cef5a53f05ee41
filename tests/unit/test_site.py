"""`relforge site`: published_versions.json against what `matrix docs` prints, unavailable
combinations with their reasons, escaping, and writing the folder as one unit."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import EnvironmentFault, RefusedError
from relforge.matrix.docs import render_docs, with_download_url
from relforge.matrix.load import load_matrix
from relforge.site import SiteRequest, build_site
from relforge.site.write import MARKER, write_site
from tests.conftest import EXAMPLE, PYTORCH, SMALL, Result
from tests.site_oracle import docs_rows, expected_command

Run = Callable[..., Result]


def _versions(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "published_versions.json").read_text())
    return data


def _check_against_docs(matrix_path: Path, out: Path, release: str, url: str | None) -> int:
    matrix = load_matrix(str(matrix_path))
    if url is not None:
        matrix = with_download_url(matrix, url)
    docs = render_docs(matrix, [release])
    rows = docs_rows(docs, matrix.project.title, release)
    entry = next(r for r in _versions(out)["releases"] if r["release"] == release)
    labels = {c["value"]: c["label"] for c in entry["choices"]["accelerator"]}
    checked = 0
    for combo in entry["combinations"]:
        sel = combo["selection"]
        want = expected_command(
            rows, labels[sel["accelerator"]], sel["platform"], sel["channel"], sel["installer"]
        )
        if want is None:
            assert not combo["available"], combo
            assert combo["reason"]
        else:
            assert combo["available"], combo
            assert combo["command"] == want, sel
            checked += 1
    return checked


def test_every_pytorch_29_combination_matches_matrix_docs(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(PYTORCH)), out=out, releases=["2.9"]))
    entry = _versions(out)["releases"][0]
    # 3 channels × 6 platforms × 2 installers × 7 variants, every one accounted for
    assert len(entry["combinations"]) == 252
    # linux-x86_64 5 variants, 3 × 3 more on aarch64/macOS/windows, 2 on windows-arm64, 1 s390x …
    assert _check_against_docs(PYTORCH, out, "2.9", None) == 3 * 2 * (5 + 3 * 3 + 2 + 2 + 1)


def test_every_release_of_pytorch_matches_docs(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(PYTORCH)), out=out))
    assert [r["release"] for r in _versions(out)["releases"]] == ["2.9", "2.8", "2.7", "2.6"]
    for release in ("2.6", "2.7", "2.8", "2.9"):
        assert _check_against_docs(PYTORCH, out, release, None) > 0
    entry = next(r for r in _versions(out)["releases"] if r["release"] == "2.7")
    full = [c for c in entry["combinations"] if c["selection"]["accelerator"] == "cu126_full"]
    assert [c["python"] for c in full if c["available"]] == [["3.11"]] * 6  # 3 channels × 2


def test_example_commands_and_the_pypi_default(tmp_path: Path) -> None:
    out = tmp_path / "site"
    url = "https://downloads.example.org/hello"
    build_site(SiteRequest(matrix=load_matrix(str(EXAMPLE)), out=out, download_url=url))
    assert _check_against_docs(EXAMPLE, out, "1.0", url) == 12
    combos = {
        tuple(c["selection"].values()): c for c in _versions(out)["releases"][0]["combinations"]
    }
    assert combos["release", "linux-x86_64", "pip", "cpu"]["command"] == "pip3 install hello-native"
    assert combos["release", "linux-x86_64", "pip", "cpu"]["source"] == "pypi"
    assert (
        combos["nightly", "linux-x86_64", "uv", "cu130"]["command"]
        == f"uv pip install --prerelease allow hello-native --default-index {url}/whl/nightly/cu130"
    )
    assert (
        combos["test", "linux-x86_64", "pip", "cpu"]["command"]
        == f"pip3 install hello-native --index-url {url}/whl/test/cpu"
    )


def test_a_combination_every_cell_of_which_is_excluded_shows_the_rule_reason(
    tmp_path: Path, write: Callable[[str], Path]
) -> None:
    text = SMALL.replace(
        "    exclude:\n",
        "    exclude:\n"
        "      - match: {platform: windows-x86_64, variant: cu128}\n"
        "        reason: Windows CUDA wheels come later\n",
        1,
    )
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(write(text))), out=out, releases=["1.0"]))
    combos = _versions(out)["releases"][0]["combinations"]
    windows_cuda = [
        c
        for c in combos
        if c["selection"]["platform"] == "windows-x86_64"
        and c["selection"]["accelerator"] == "cu128"
    ]
    assert len(windows_cuda) == 6
    assert all(c == {**c, "available": False} for c in windows_cuda)
    assert {c["reason"] for c in windows_cuda} == {"Windows CUDA wheels come later"}
    assert all("command" not in c for c in windows_cuda)  # never a broken command
    # a partly excluded combination keeps its command and names the Pythons it lacks
    cpu = next(
        c
        for c in combos
        if c["selection"] == {**c["selection"], "platform": "windows-x86_64", "accelerator": "cpu"}
    )
    assert cpu["python"] == ["3.11", "3.12"]
    assert cpu["python_not_built"] == [
        {"python": "3.13t", "reason": "no free-threaded Windows build yet"}
    ]
    page = (out / "compatibility.html").read_text()
    assert "Windows CUDA wheels come later" in page


def test_archives_are_listed_per_variant_with_their_files(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(PYTORCH)), out=out, releases=["2.9"]))
    combos = _versions(out)["releases"][0]["combinations"]
    sel = {"channel": "test", "platform": "linux-x86_64", "installer": "uv", "accelerator": "cu128"}
    combo = next(c for c in combos if c["selection"] == sel)
    assert combo["archives"] == [
        {
            "id": "libtorch-linux-x86_64-cu128-shared-with-deps-release",
            "archive": "shared-with-deps",
            "config": "release",
            "folder": "libtorch/test/cu128/",
            "file": "libtorch-shared-with-deps-2.9.0+cu128.zip",
            "url": "https://download.pytorch.org/libtorch/test/cu128/"
            "libtorch-shared-with-deps-2.9.0%2Bcu128.zip",
        }
    ]
    nightly = next(c for c in combos if c["selection"] == {**sel, "channel": "nightly"})
    (dated,) = nightly["archives"]
    assert dated["file"] == "libtorch-shared-with-deps-2.9.0.devYYYYMMDD+cu128.zip"
    assert dated["url"] is None  # the build date is unknown here: no link to a guessed file
    mac = next(
        c
        for c in combos
        if c["selection"] == {**sel, "platform": "macos-arm64", "accelerator": "cpu"}
    )
    assert [a["id"] for a in mac["archives"]] == [
        "libtorch-macos-arm64-cpu-shared-with-deps-release"  # PyTorch 2.9 ships it
    ]
    s390x = next(
        c
        for c in combos
        if c["selection"] == {**sel, "platform": "linux-s390x", "accelerator": "cpu"}
    )
    assert s390x["archives"] == []  # wheels only


def test_hostile_names_cannot_escape_the_page(tmp_path: Path, write: Callable[[str], Path]) -> None:
    evil = "</script><script>alert(1)</script>"
    text = SMALL.replace("  name: demo\n", f'  name: demo\n  display_name: "{evil}"\n', 1)
    text = text.replace("no free-threaded Windows build yet", f'"{evil} <b>x</b>"')
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(write(text))), out=out))
    index = (out / "index.html").read_text()
    compat = (out / "compatibility.html").read_text()
    assert evil not in index and evil not in compat and "<b>x</b>" not in compat
    assert index.count("<script") == 2  # the data and the code, nothing injected
    blob = index.split('<script type="application/json" id="published-versions">')[1]
    data = json.loads(blob.split("</script>")[0])
    assert data["project"]["title"] == evil


def test_the_site_names_its_assets_and_nothing_outside(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(PYTORCH)), out=out, releases=["2.9"]))
    for page in ("index.html", "compatibility.html"):
        text = (out / page).read_text()
        # one link, the icon, drawn from a data: URL (no request; no /favicon.ico 404)
        icons = re.findall(r'<link rel="icon" href="data:image/svg\+xml,[^"]*">', text)
        assert len(icons) == 1, page
        text = text.replace(icons[0], "")
        for marker in ("src=", "<link", "@import", "url(", "http-equiv"):
            assert marker not in text, (page, marker)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MARKER, "index.html", "compatibility.html", "published_versions.json"]
    )


def test_cli_site_and_its_errors(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "site"
    missing = run("site", str(EXAMPLE), "--out", str(out))
    assert missing.code == 2
    assert "example.yaml:6:3: project.download_url" in missing.err
    assert "--download-url" in missing.err
    assert not out.exists()
    bad = run("site", str(EXAMPLE), "--out", str(out), "--download-url", "javascript:alert(1)")
    assert bad.code == 2 and "--download-url" in bad.err
    unknown = run("site", str(PYTORCH), "--release", "3.0", "--out", str(out))
    assert unknown.code == 2 and "--release" in unknown.err
    done = run("site", str(PYTORCH), "-r", "2.8", "-r", "2.9", "--out", str(out))
    assert done.code == 0, done.err
    assert str(out / "index.html") in done.out
    assert [r["release"] for r in _versions(out)["releases"]] == ["2.9", "2.8"]
    assert "What changed from 2.8 to 2.9" in (out / "compatibility.html").read_text()


def test_matrix_docs_takes_the_same_download_url(run: Run) -> None:
    done = run("matrix", "docs", str(EXAMPLE), "--download-url", "https://mirror.example/x")
    assert done.code == 0, done.err
    assert "`pip3 install hello-native --index-url https://mirror.example/x/whl/test/cpu`" in (
        done.out
    )


def test_a_folder_relforge_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(RefusedError):
        write_site({"index.html": "x"}, out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_failed_write_leaves_the_previous_site_whole(tmp_path: Path) -> None:
    out = tmp_path / "site"
    write_site({"index.html": "old", "published_versions.json": "{}"}, out)
    with pytest.raises(EnvironmentFault):
        # "a" is a file, so "a/b" cannot be written: the failure comes after some files
        write_site({"index.html": "new", "a": "x", "a/b": "y"}, out)
    assert (out / "index.html").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no staging left behind
    write_site({"index.html": "new"}, out)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_publish_is_a_plan_until_executed_and_a_rerun_writes_nothing(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ("site", str(EXAMPLE), "--out", "site", "--download-url", "https://x.example/dl")
    store = tmp_path / ".relforge" / "store" / "site"
    planned = run(*args, "--publish")
    assert planned.code == 0, planned.err
    assert "dry run: nothing was uploaded" in planned.out
    assert not store.exists()
    assert planned.out.index("upload site/published_versions.json") < planned.out.index(
        "upload site/index.html"
    )  # the page that reads the data goes last
    done = run(*args, "--publish", "--execute")
    assert done.code == 0 and "uploaded 3 file(s)" in done.out
    assert (store / "index.html").read_bytes() == (tmp_path / "site" / "index.html").read_bytes()
    again = run(*args, "--publish", "--execute")
    assert again.code == 0 and "uploaded 0 file(s); 3 already identical" in again.out
    changed = run(*args[:-1], "https://y.example/dl", "--publish", "--execute")
    # only the files that name the download URL changed
    assert "uploaded 2 file(s); 1 already identical" in changed.out
    assert "skip   site/compatibility.html" in changed.out
    assert "https://y.example/dl/whl/test/cpu" in (store / "published_versions.json").read_text()
    misuse = run(*args, "--execute")
    assert misuse.code == 2 and "--publish" in misuse.err


def test_a_killed_run_leaves_nothing_behind_the_next_one(tmp_path: Path) -> None:
    out = tmp_path / "site"
    write_site({"index.html": "one"}, out)
    stale = tmp_path / ".site.abc123.new"  # as a run killed before its rename leaves it
    stale.mkdir()
    (stale / MARKER).write_text("")
    foreign = tmp_path / ".site.mine.new"  # not ours: kept
    foreign.mkdir()
    write_site({"index.html": "two"}, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.mine.new", "site"]
    assert (out / "index.html").read_text() == "two"


def test_a_hostile_download_url_stays_one_shell_word(tmp_path: Path) -> None:
    url = "https://x.example/a;touch${IFS}pwned$(id)`id`"
    out = tmp_path / "site"
    build_site(SiteRequest(matrix=load_matrix(str(EXAMPLE)), out=out, download_url=url))
    for combo in _versions(out)["releases"][0]["combinations"]:
        argv = shlex.split(combo["command"])
        if combo["source"] == "index":
            flag = "--index-url" if argv[0] == "pip3" else "--default-index"
            assert argv[argv.index(flag) + 1].startswith(url + "/whl/")
            assert len(argv) == argv.index(flag) + 2  # nothing after the URL
