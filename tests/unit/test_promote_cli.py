"""publish / promote / pypi on the local store: refusals, usage errors and dry runs, each a
one-paragraph error with its exit code."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.manifest import Verdict, load_manifest
from tests.conftest import Result
from tests.promote_kit import build_wheel, matrix_text, release_wheels, write_manifest

LINUX_CPU = "wheel-linux-x86_64-py3.11-cpu"
WINDOWS = "wheel-windows-x86_64-py3.11-cpu"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return release_wheels(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def work(tmp_path: Path, built: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrix.yaml").write_text(matrix_text(), encoding="utf-8")
    dist = tmp_path / "dist"
    dist.mkdir()
    for wheel in built.values():
        shutil.copy(wheel, dist)
    return tmp_path


def wheels(work: Path, built: dict[str, Path]) -> dict[str, Path]:
    return {cell: work / "dist" / wheel.name for cell, wheel in built.items()}


def publish(run: Callable[..., Result], *extra: str) -> Result:
    return run(
        "publish",
        "matrix.yaml",
        "--channel",
        "test",
        "--manifest",
        "relforge-manifest.json",
        *extra,
    )


def test_dry_run_writes_nothing(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    result = publish(run)
    assert result.code == 0 and "dry run: nothing was written" in result.out
    assert not (work / ".relforge").exists()


def test_unvalidated_artifacts_are_refused(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(
        work / "relforge-manifest.json", wheels(work, built), validated={LINUX_CPU: False}
    )
    result = publish(run, "--execute")
    assert result.code == 5
    assert f"{LINUX_CPU}: failed RF-W001" in result.err and "Traceback" not in result.err
    assert not (work / ".relforge").exists()
    write_manifest(work / "relforge-manifest.json", wheels(work, built), validated=False)
    never = publish(run, "--execute")
    assert never.code == 5 and "not validated" in never.err
    manifest = load_manifest(work / "relforge-manifest.json")
    for cell in manifest.entries:
        manifest = manifest.with_verdicts(cell, [Verdict(check="RF-R001", status="skip")])
    manifest.save(work / "relforge-manifest.json")
    skipped = publish(run, "--execute")
    assert skipped.code == 5 and f"{WINDOWS}: not validated" in skipped.err
    assert not (work / ".relforge").exists()


def test_changed_file_and_missing_file(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    files = wheels(work, built)
    write_manifest(work / "relforge-manifest.json", files)
    files[WINDOWS].write_bytes(files[WINDOWS].read_bytes() + b"\0")
    changed = publish(run, "--execute")
    assert changed.code == 5 and "changed after it was built" in changed.err
    files[WINDOWS].unlink()
    missing = publish(run, "--execute")
    assert missing.code == 2 and "does not exist" in missing.err


def test_usage_errors(work: Path, built: dict[str, Path], run: Callable[..., Result]) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built), channel="nightly")
    wrong = publish(run)
    assert wrong.code == 2 and "is for release 1.0 on nightly, not 1.0 on test" in wrong.err
    assert "drop --channel to take the manifest's (nightly)" in wrong.err
    release = run(
        "publish", "matrix.yaml", "--channel", "release", "--manifest", "relforge-manifest.json"
    )
    assert release.code == 2
    (work / "bad.yaml").write_text(matrix_text("publishing:\n  store: ftp://nowhere\n"))
    bad = run("index", "bad.yaml", "--channel", "test")
    assert bad.code == 2 and "publishing.store" in bad.err
    nothing = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert nothing.code == 3 and "publish to test first" in nothing.err
    not_a_url = run("pypi", "upload", "matrix.yaml", "--version", "1.0.0", "--repository-url", "x")
    assert not_a_url.code == 2 and "--repository-url" in not_a_url.err


def test_promote_selects_by_version_and_refuses_what_differs(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    assert publish(run, "--execute").code == 0
    other = run("promote", "matrix.yaml", "--version", "1.0.1")
    assert other.code == 3 and "no manifest of rfdemo 1.0.1" in other.err
    assert (
        run("promote", "matrix.yaml", "--version", "1.0.0", "--from", "test", "--to", "test").code
        == 2
    )
    plan = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert plan.code == 0 and "6 to write" in plan.out
    assert (
        "whl/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl ← whl/test/cu128/"
        in plan.out
    )
    assert not (work / ".relforge" / "store" / "whl" / "cu128").exists()
    # a different object already at a destination key: refused, nothing copied
    squat = work / ".relforge" / "store" / "whl" / "cpu" / "rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"
    squat.parent.mkdir(parents=True)
    squat.write_bytes(b"other bytes")
    refused = run("promote", "matrix.yaml", "--version", "1.0.0", "--execute")
    assert refused.code == 5 and "never overwritten" in refused.err
    assert sorted(p.name for p in squat.parent.iterdir()) == [squat.name]
    squat.unlink()
    done = run("promote", "matrix.yaml", "--version", "1.0.0", "--execute")
    assert done.code == 0, done.err
    # without publishing.backup_store the backups go to <store>/backup, byte for byte
    store = work / ".relforge" / "store"
    backups = sorted(
        p.relative_to(store / "backup").as_posix() for p in store.glob("backup/**/*.whl")
    )
    released = sorted(p.relative_to(store).as_posix() for p in store.glob("whl/c*/*.whl"))
    assert backups == [f"rfdemo/1.0.0/{key}" for key in released] and len(released) == 3
    for key in released:
        assert (store / "backup" / "rfdemo" / "1.0.0" / key).read_bytes() == (
            store / key
        ).read_bytes()


def test_pypi_stage_refuses_two_wheels_with_one_pypi_name(
    work: Path, built: dict[str, Path], run: Callable[..., Result], tmp_path: Path
) -> None:
    files = wheels(work, built)
    # the Windows cell's file carries the Linux platform tag: both become one PyPI file name
    odd = build_wheel(
        tmp_path / "odd", version="1.0.0+cpu", plat="manylinux_2_28_x86_64", payload="odd"
    )
    files[WINDOWS] = work / "dist" / "windows" / odd.name
    files[WINDOWS].parent.mkdir()
    shutil.copy(odd, files[WINDOWS])
    del files[LINUX_CPU]
    write_manifest(work / "relforge-manifest.json", files)
    assert publish(run, "--execute").code == 0, publish(run).err
    promote = ("promote", "matrix.yaml", "--version", "1.0.0", "--partial", "--execute")
    assert run(*promote).code == 0  # two of three cells: promoted on purpose
    clash = run("pypi", "stage", "matrix.yaml", "--version", "1.0.0")
    assert clash.code == 5
    assert "rfdemo-1.0.0-py3-none-manylinux_2_28_x86_64.whl ← " in clash.err
    assert WINDOWS in clash.err and "wheel-linux-x86_64-py3.11-cu128" in clash.err
    assert not (work / ".relforge" / "store" / "pypi-staging").exists()


def test_promote_refuses_a_changed_source_object_before_copying_anything(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    assert publish(run, "--execute").code == 0
    store = work / ".relforge" / "store"
    # someone replaced one validated object of the test channel with other bytes of the same size
    changed = store / "whl" / "test" / "cu128" / built["wheel-linux-x86_64-py3.11-cu128"].name
    data = changed.read_bytes()
    changed.unlink()
    changed.write_bytes(data[:-4] + b"XXXX")
    for extra in ((), ("--execute",)):
        refused = run("promote", "matrix.yaml", "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert "whl/test/cu128/" in refused.err and "not the validated artifact" in refused.err
    # nothing reached the release channel, the backup or the manifests
    assert not (store / "whl" / "cpu").exists() and not (store / "whl" / "cu128").exists()
    assert not (store / "backup").exists()
    assert not (store / "relforge" / "manifests" / "release").exists()


def test_nightly_prune_leaves_other_projects_of_the_folder_alone(
    work: Path, run: Callable[..., Result], tmp_path: Path
) -> None:
    (work / "matrix.yaml").write_text(matrix_text("publishing:\n  nightly_keep: 1\n"))
    folder = work / ".relforge" / "store" / "whl" / "nightly" / "cpu"
    folder.mkdir(parents=True)
    # a dependency the nightly index also serves (as pytorch-triton or numpy are), not ours
    others = [f"otherdep-{v}-py3-none-any.whl" for v in ("1.0", "2.0")]
    for name in others:
        (folder / name).write_bytes(b"not ours")
    for day in ("20260101", "20260102"):
        wheel = build_wheel(
            tmp_path / day, version=f"1.0.0.dev{day}+cpu", plat="manylinux_2_28_x86_64"
        )
        write_manifest(tmp_path / day / "m.json", {LINUX_CPU: wheel}, channel="nightly")
        # one cell of three: --partial puts it on the pages, so it counts for nightly_keep
        args = ["publish", "matrix.yaml", "--channel", "nightly", "--partial", "--manifest"]
        result = run(*args, str(tmp_path / day / "m.json"), "--execute")
        assert result.code == 0, result.err
    assert "delete    whl/nightly/cpu/rfdemo-1.0.0.dev20260101+cpu" in result.out
    assert "otherdep" not in result.out
    assert sorted(p.name for p in folder.glob("*.whl")) == [
        *others,
        "rfdemo-1.0.0.dev20260102+cpu-py3-none-manylinux_2_28_x86_64.whl",
    ]
    # no manifest vouches for the dependency: it is reported, never advertised
    assert "otherdep" not in (folder / "index.html").read_text()
    (folder / ".relforge-pages.json").unlink()  # make the next index look at every file again
    index = run("index", "matrix.yaml", "--channel", "nightly")
    assert index.code == 0, index.err
    assert "2 file(s) no stored manifest vouches for are not advertised: otherdep-1.0" in index.out


def test_pypi_stage_dry_run_shows_a_staged_file_it_would_refuse(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    assert publish(run, "--execute").code == 0
    assert run("promote", "matrix.yaml", "--version", "1.0.0", "--execute").code == 0
    stage = ("pypi", "stage", "matrix.yaml", "--version", "1.0.0")
    assert run(*stage, "--execute").code == 0
    again = run(*stage)
    assert again.code == 0 and "2 already there (same sha256)" in again.out
    # PyPI's Linux wheel is now the CPU variant: same PyPI file name, other bytes
    text = (work / "matrix.yaml").read_text()
    (work / "matrix.yaml").write_text(text.replace("linux-x86_64: cu128,", "linux-x86_64: cpu,"))
    staged = sorted((work / ".relforge" / "store" / "pypi-staging" / "1.0.0").iterdir())
    before = {p: p.read_bytes() for p in staged}
    for extra in ((), ("--execute",)):
        refused = run(*stage, *extra)
        assert refused.code == 5, refused.out + refused.err
        assert "rfdemo-1.0.0-py3-none-manylinux_2_28_x86_64.whl" in refused.err
        assert "never overwritten" in refused.err
    assert {p: p.read_bytes() for p in staged} == before


def test_a_broken_stored_manifest_is_named_by_its_key(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    assert publish(run, "--execute").code == 0
    folder = work / ".relforge/store/relforge/manifests/test/rfdemo/1.0.0"
    # under its own digest (as content addressing names it), a broken manifest is named
    text = b'{"schema_version": 1, "entries": []}'
    broken = folder / f"{hashlib.sha256(text).hexdigest()}.json"
    broken.write_bytes(text)
    result = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert result.code == 2, result.out + result.err
    assert f"relforge/manifests/test/rfdemo/1.0.0/{broken.name}" in result.err
    assert "not a relforge manifest" in result.err
    # under a key that does not name its digest, it is refused before it is read
    broken.rename(folder / "0000.json")
    refused = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert refused.code == 5, refused.out + refused.err
    assert "relforge/manifests/test/rfdemo/1.0.0/0000.json" in refused.err


def _install_lines(out: str) -> list[str]:
    lines = out.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("install from")) :]


def test_publish_ends_with_the_index_url_and_the_commands_that_install_from_it(
    work: Path, built: dict[str, Path], run: Callable[..., Result], tmp_path: Path
) -> None:
    write_manifest(work / "relforge-manifest.json", wheels(work, built))
    url = (work / ".relforge" / "store").resolve().as_uri() + "/whl/test"
    dry = publish(run)
    assert _install_lines(dry.out) == [
        "install from the test channel (after --execute):",
        f"  index: {url}",
        f"  pip: pip3 install rfdemo --index-url {url}",
        f"  uv: uv pip install rfdemo --default-index {url}",
    ]
    done = publish(run, "--execute")
    assert done.code == 0, done.err
    assert _install_lines(done.out)[0] == "install from the test channel:"
    assert done.out.splitlines()[-1] == f"  uv: uv pip install rfdemo --default-index {url}"
    # the URL is one pip reads: it finds the published wheel there, and nothing else
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--isolated",
            "download",
            "--no-deps",
            "--index-url",
            url,
            "--platform",
            "win_amd64",
            "--only-binary=:all:",
            "--dest",
            str(tmp_path / "got"),
            "rfdemo==1.0.0+cpu",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert [p.name for p in (tmp_path / "got").iterdir()] == [built[WINDOWS].name]


def test_publish_names_the_download_url_and_says_when_the_pages_come_later(
    work: Path, built: dict[str, Path], run: Callable[..., Result]
) -> None:
    text = matrix_text().replace(
        "  name: rfdemo\n", "  name: rfdemo\n  download_url: https://dl.example.org/\n"
    )
    (work / "matrix.yaml").write_text(text, encoding="utf-8")
    write_manifest(work / "relforge-manifest.json", wheels(work, built), channel="nightly")
    args = ["--channel", "nightly", "--no-index"]
    dry = run("publish", "matrix.yaml", "--manifest", "relforge-manifest.json", *args)
    assert dry.code == 0, dry.err
    url = "https://dl.example.org/whl/nightly"
    assert _install_lines(dry.out) == [
        "install from the nightly channel (after --execute and `relforge index`):",
        f"  index: {url}",
        f"  pip: pip3 install --pre rfdemo --index-url {url}",
        f"  uv: uv pip install --prerelease allow rfdemo --default-index {url}",
    ]
