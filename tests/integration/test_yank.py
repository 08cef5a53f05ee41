"""`relforge yank` (PEP 592) on the local store: the dry run writes nothing, `--execute` marks
the version's files on the HTML and JSON pages of every channel that holds them, re-indexing
keeps the yank, real pip and uv skip a yanked file unless pinned with `==`, and `--undo`
restores the pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3, pip_install
from tests.integration.test_promote_flow import objects, s3_matrix
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
CPU = "wheel-linux-x86_64-py3.11-cpu"
YANKED = "rfdemo-1.0.1+cpu-py3-none-manylinux_2_28_x86_64.whl"
KEPT = "rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def pages(folder: Path) -> tuple[str, dict[str, object]]:
    html = (folder / "rfdemo" / "index.html").read_text()
    data = json.loads((folder / "rfdemo" / "index.json").read_text())
    return html, {f["filename"]: f.get("yanked") for f in data["files"]}


def html_line(html: str, filename: str) -> str:
    return next(line for line in html.splitlines() if f">{filename}<" in line)


def uv_install(tmp_path: Path, index_url: str, requirement: str) -> str:
    venv = tmp_path / f"uv-{uuid.uuid4().hex[:8]}"
    uv = Path(sys.executable).parent / "uv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    subprocess.run([str(uv), "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    argv = [str(uv), "pip", "install", "--no-cache", "--python", python]
    done = subprocess.run(
        [*argv, "--index-url", index_url, requirement],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import rfdemo; print(rfdemo.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture
def published(tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """1.0.0 and 1.0.1 in the test channel, 1.0.1 promoted to release; returns the matrix."""
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    for version in ("1.0.0", "1.0.1"):
        work = tmp_path / f"work-{version}"
        manifest = work / "relforge-manifest.json"
        write_manifest(manifest, release_wheels(work, version=version))
        argv = ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)]
        assert run(*argv, "--execute").code == 0
    promoted = run("promote", str(matrix), "--version", "1.0.1", "--execute")
    assert promoted.code == 0, promoted.out + promoted.err
    return matrix


def test_yank_marks_every_channel_survives_reindex_and_installers_skip_it(
    tmp_path: Path,
    run: Callable[..., Result],
    published: Path,
    static_server: Callable[[Path], str],
) -> None:
    matrix = str(published)
    store = tmp_path / ".relforge" / "store"
    test_cpu, release_cpu = store / "whl" / "test" / "cpu", store / "whl" / "cpu"
    before = snapshot(store)

    dry = run("yank", matrix, "--version", "1.0.1", "--cell", CPU, "--reason", "bad <ABI> & more")
    assert dry.code == 0, dry.err
    assert f"test: whl/test/cpu/{YANKED}" in dry.out
    assert f"release: whl/cpu/{YANKED}" in dry.out
    assert "cu128" not in dry.out and "win_amd64" not in dry.out  # --cell narrows
    assert snapshot(store) == before  # the dry run wrote nothing

    done = run(
        "yank", matrix, "--version", "1.0.1", "--cell", CPU, "--reason", "bad <ABI> & more",
        "--execute",
    )  # fmt: skip
    assert done.code == 0, done.err
    for folder in (test_cpu, release_cpu):
        html, yanked = pages(folder)
        assert 'data-yanked="bad &lt;ABI&gt; &amp; more"' in html_line(html, YANKED)
        assert html.count("data-yanked") == 1  # the windows wheel of the cell is not this cell
        assert yanked[YANKED] == "bad <ABI> & more"
        assert yanked.get(KEPT) is None
    # other cells' pages of the same version are not yanked
    cu128 = store / "whl" / "test" / "cu128" / "rfdemo" / "index.html"
    assert "data-yanked" not in cu128.read_text()

    again = run(
        "yank", matrix, "--version", "1.0.1", "--cell", CPU, "--reason", "bad <ABI> & more",
        "--execute",
    )  # fmt: skip
    assert again.code == 0 and "everything was already in place" in again.out
    assert "already yanked" in again.out

    # the yank lives in the store: a full re-index (forced by removing the page-set marker)
    # keeps it
    (test_cpu / ".relforge-pages.json").unlink()
    reindex = run("index", matrix, "--channel", "test", "--execute")
    assert reindex.code == 0, reindex.err
    assert pages(test_cpu)[1][YANKED] == "bad <ABI> & more"

    # so do publish (a new version re-indexes the folder) and promote
    work = tmp_path / "work-1.0.2"
    manifest = work / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(work, version="1.0.2"))
    argv = ["publish", matrix, "--channel", "test", "--manifest", str(manifest), "--execute"]
    assert run(*argv).code == 0
    assert run("promote", matrix, "--version", "1.0.2", "--execute").code == 0
    for folder in (test_cpu, release_cpu):
        yanked = pages(folder)[1]
        assert yanked[YANKED] == "bad <ABI> & more"
        assert yanked["rfdemo-1.0.2+cpu-py3-none-manylinux_2_28_x86_64.whl"] is None
    (test_cpu / "rfdemo-1.0.2+cpu-py3-none-manylinux_2_28_x86_64.whl").unlink()
    assert run("index", matrix, "--channel", "test", "--execute").code == 0

    url = static_server(store)
    assert pip_install(tmp_path, f"{url}/whl/test/cpu/", "rfdemo") == f"{CPU} 1.0.0+cpu"
    assert pip_install(tmp_path, f"{url}/whl/test/cpu/", "rfdemo==1.0.1") == f"{CPU} 1.0.1+cpu"
    assert uv_install(tmp_path, f"{url}/whl/test/cpu/", "rfdemo") == "1.0.0+cpu"
    # uv takes a yanked file only for a pin of the whole version, local label included
    assert uv_install(tmp_path, f"{url}/whl/test/cpu/", "rfdemo==1.0.1+cpu") == "1.0.1+cpu"

    undo = run("yank", matrix, "--version", "1.0.1", "--undo", "--execute")
    assert undo.code == 0, undo.err
    for folder in (test_cpu, release_cpu):
        html, yanked = pages(folder)
        assert "data-yanked" not in html and not any(yanked.values())
    assert not (store / "relforge" / "yanked" / "test.json").exists()
    assert pip_install(tmp_path, f"{url}/whl/test/cpu/", "rfdemo") == f"{CPU} 1.0.1+cpu"


def test_yank_refuses_what_it_cannot_do(
    tmp_path: Path, run: Callable[..., Result], published: Path
) -> None:
    matrix = str(published)
    store = tmp_path / ".relforge" / "store"
    before = snapshot(store)
    nowhere = run("yank", matrix, "--version", "9.9.9", "--reason", "x", "--execute")
    assert nowhere.code == 3 and "9.9.9" in nowhere.err
    # 1.0.0 was never promoted: --channel release holds none of it
    unpromoted = run(
        "yank", matrix, "--version", "1.0.0", "--channel", "release", "--reason", "x", "--execute"
    )
    assert unpromoted.code == 3, unpromoted.out + unpromoted.err
    assert run("yank", matrix, "--version", "1.0.1", "--execute").code == 2  # no reason
    cell = run("yank", matrix, "--version", "1.0.1", "--cell", "nope", "--reason", "x")
    assert cell.code == 2 and "nope" in cell.err
    assert run("yank", matrix, "--version", "not a version", "--reason", "x").code == 2
    assert snapshot(store) == before
    # undoing what is not yanked changes nothing
    undo = run("yank", matrix, "--version", "1.0.1", "--undo", "--execute")
    assert undo.code == 0 and "everything was already in place" in undo.out
    assert snapshot(store) == before


def test_yank_on_s3_marks_the_pages_including_the_directory_page(
    tmp_path: Path, s3: S3, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = str(s3_matrix(tmp_path, s3))
    work = tmp_path / "work"
    manifest = work / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(work, version="1.0.1"))
    argv = ["publish", matrix, "--channel", "test", "--manifest", str(manifest), "--execute"]
    assert run(*argv).code == 0
    before = objects(s3)
    assert run("yank", matrix, "--version", "1.0.1", "--reason", "bad").code == 0
    assert objects(s3) == before  # the dry run wrote nothing
    done = run("yank", matrix, "--version", "1.0.1", "--reason", "bad", "--execute")
    assert done.code == 0, done.err
    client: Any = s3.client()

    def body(key: str) -> str:
        got = client.get_object(Bucket=s3.bucket, Key=f"dl/whl/test/cpu/rfdemo/{key}")
        return str(got["Body"].read().decode())

    for key in ("index.html", ""):  # `rfdemo/` is what plain S3 serves for the folder URL
        assert body(key).count('data-yanked="bad"') == 2
    assert all(f["yanked"] == "bad" for f in json.loads(body("index.json"))["files"])
    assert "dl/relforge/yanked/test.json" in objects(s3)


def test_verify_finds_a_page_whose_yank_marks_differ_from_the_record_and_repair_restores_them(
    tmp_path: Path, run: Callable[..., Result], published: Path
) -> None:
    """A yank lives in the record; a page that drops a mark (installers would take the bad file
    again), invents one or changes its reason lies, on a variant page or the channel root."""
    matrix = str(published)
    store = tmp_path / ".relforge" / "store"
    yank = ["--version", "1.0.1", "--cell", CPU, "--reason", "bad ABI", "--execute"]
    assert run("yank", matrix, *yank).code == 0
    clean = run("verify", matrix, "--channel", "release")
    assert clean.code == 0, clean.out + clean.err  # the marks the index wrote agree

    variant_html = store / "whl" / "cpu" / "rfdemo" / "index.html"
    root_json = store / "whl" / "rfdemo" / "index.json"
    variant_html.write_text(variant_html.read_text().replace(' data-yanked="bad ABI"', ""))
    page = json.loads(root_json.read_text())
    (other,) = [f for f in page["files"] if "cu128" in f["filename"]][:1]
    for f in page["files"]:
        if f["filename"] == YANKED:
            f["yanked"] = "a different reason"
    other["yanked"] = True  # a file nobody yanked
    root_json.write_text(json.dumps(page))

    found = run("verify", matrix, "--channel", "release", "--format", "json")
    assert found.code == 4, found.out + found.err
    messages = {(f["key"], f["message"]) for f in json.loads(found.out)["findings"]}
    assert (
        "whl/cpu/rfdemo/index.html",
        f"does not mark {YANKED} yanked, the yank record does ('bad ABI')",
    ) in messages
    root = {m for k, m in messages if k == "whl/rfdemo/index.json"}
    changed = "yanked for 'a different reason', the yank record says 'bad ABI'"
    assert any(changed in m for m in root)
    assert any(other["url"] in m and "yanked (''), the yank record does not" in m for m in root)

    repaired = run("verify", matrix, "--channel", "release", "--repair", "--execute")
    assert repaired.code == 0, repaired.out + repaired.err
    assert 'data-yanked="bad ABI"' in html_line(variant_html.read_text(), YANKED)
    assert run("verify", matrix, "--channel", "release").code == 0
