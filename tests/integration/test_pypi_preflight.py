"""PyPI's limits and upload checks, before the first upload, against a real pypiserver: a file
over the per-file limit, a release over the project quota (the project's usage read from the
index), a file name that disagrees with METADATA or WHEEL, an unknown classifier, a metadata
version twine cannot send — each refused with every problem listed, and nothing uploaded (or
staged)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.stores.local import LocalStore
from tests.conftest import Result
from tests.integration.conftest import PyPIServer
from tests.promote_kit import build_wheel, matrix_text, padded_wheel, release_wheels, write_manifest

pytestmark = pytest.mark.slow
MIB = 1 << 20
STAGING = Path(".relforge/store/pypi-staging/1.0.0")


def _matrix(extra: str = "") -> str:
    text = matrix_text().replace("size_limit_mb: 5", "size_limit_mb: 100")
    return text + (f"publishing:\n{extra}" if extra else "")


@pytest.fixture
def promoted(tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """Release 1.0.0 published and promoted in the local store; the linux wheel is 2 MiB."""
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(_matrix(), encoding="utf-8")
    wheels = release_wheels(tmp_path / "work")
    padded_wheel(wheels["wheel-linux-x86_64-py3.11-cu128"], 2 * MIB)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, wheels)
    publish = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    assert run(*publish, "--execute").code == 0
    assert run("promote", str(matrix), "--version", "1.0.0", "--execute").code == 0
    for name in ("TWINE_USERNAME", "TWINE_PASSWORD", "TWINE_REPOSITORY_URL"):
        monkeypatch.delenv(name, raising=False)
    return matrix


def _upload(run: Callable[..., Result], matrix: Path, server: PyPIServer, *extra: str) -> Result:
    argv = ("pypi", "upload", str(matrix), "--version", "1.0.0")
    return run(*argv, "--repository-url", server.url, *extra)


def _refused(done: Result, count: int) -> list[str]:
    """The problems a refusal lists (asserting exit 5, one paragraph, `count` problems)."""
    assert done.code == 5, done.out + done.err
    assert "Traceback" not in done.err
    assert f"{count} problem(s) PyPI or twine would refuse" in done.err, done.err
    lines = [line.strip() for line in done.err.splitlines() if line.startswith("  ")]
    return [line for line in lines if not line.startswith("hint:")]


def test_a_file_over_the_per_file_limit_is_refused_before_staging_and_uploading(
    promoted: Path,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    promoted.write_text(_matrix("  pypi_file_limit_mb: 1\n"), encoding="utf-8")
    stage = ("pypi", "stage", str(promoted), "--version", "1.0.0")
    for argv in (stage, (*stage, "--execute")):
        problems = _refused(run(*argv), 1)
        assert "over the project's per-file limit of 1 MiB" in problems[0]
        assert "rfdemo-1.0.0-py3-none-manylinux_2_28_x86_64.whl: 2.0 MiB" in problems[0]
        assert "publishing.pypi_file_limit_mb" in problems[0]
    assert not STAGING.exists()  # nothing staged
    # staged under a larger limit, then the limit is the project's again: the upload refuses
    promoted.write_text(_matrix(), encoding="utf-8")
    assert run(*stage, "--execute").code == 0
    promoted.write_text(_matrix("  pypi_file_limit_mb: 1\n"), encoding="utf-8")
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    problems = _refused(_upload(run, promoted, pypiserver, "--execute"), 1)
    assert "per-file limit of 1 MiB" in problems[0]
    assert list(pypiserver.packages.iterdir()) == []


def test_a_release_over_the_project_quota_counts_what_the_index_already_holds(
    promoted: Path,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pypiserver holds a 3 MiB file of the project (0.9); the release is a little over 2 MiB:
    alone it fits a 4 MiB quota, with what the project uses it does not."""
    old = padded_wheel(
        build_wheel(tmp_path / "old", version="0.9", plat="manylinux_2_28_x86_64"), 3 * MIB, 7
    )
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    twine = [sys.executable, "-m", "twine", "upload", "--non-interactive"]
    subprocess.run([*twine, "--repository-url", pypiserver.url, str(old)], check=True)
    assert run("pypi", "stage", str(promoted), "--version", "1.0.0", "--execute").code == 0
    promoted.write_text(_matrix("  pypi_project_limit_mb: 4\n"), encoding="utf-8")
    for extra in ((), ("--execute",)):
        done = _upload(run, promoted, pypiserver, *extra)
        (problem,) = _refused(done, 1)
        assert "over the project's quota of 4 MiB" in problem
        assert "1 file(s) on http://127.0.0.1:" in problem  # the usage, read from the index
        assert "to the 3.0 MiB the project uses" in problem
    assert [p.name for p in pypiserver.packages.iterdir()] == [old.name]  # nothing uploaded
    promoted.write_text(_matrix("  pypi_project_limit_mb: 6\n"), encoding="utf-8")
    done = _upload(run, promoted, pypiserver, "--execute")
    assert done.code == 0, done.out + done.err
    assert "PyPI pre-flight: 2 file(s)" in done.out
    assert "MiB to the 3.0 MiB the project uses on http://127.0.0.1:" in done.out
    assert len(list(pypiserver.packages.iterdir())) == 3


def test_staging_without_a_repository_says_the_usage_was_not_read(
    promoted: Path, run: Callable[..., Result]
) -> None:
    promoted.write_text(_matrix("  pypi_project_limit_mb: 1\n"), encoding="utf-8")
    done = run("pypi", "stage", str(promoted), "--version", "1.0.0")
    (problem,) = _refused(done, 1)
    assert "over the project's quota of 1 MiB" in problem
    assert "note: the project's current usage is unknown" in done.out
    assert "publishing.pypi_repository_url is not set" in done.out


def _rewritten(wheel: Path, out: Path, name: str, **members: Callable[[str], str]) -> Path:
    """`wheel` with some `.dist-info` members edited (by suffix), saved as `out/name`; its
    METADATA without the test package's own `Private :: Do Not Upload` classifier."""
    target = out / name
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/METADATA"):
                data = data.replace(b"Classifier: Private :: Do Not Upload\n", b"")
            for suffix, edit in members.items():
                if info.filename.endswith(f".dist-info/{suffix}"):
                    data = edit(data.decode()).encode()
            dst.writestr(info, data)
    return target


def test_every_metadata_problem_of_every_file_is_listed_in_one_refusal(
    promoted: Path,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Staged files that PyPI or twine would refuse, one problem each (and one with two):
    the upload names them all and sends none — not even the good ones."""
    assert run("pypi", "stage", str(promoted), "--version", "1.0.0", "--execute").code == 0

    def built(plat: str) -> Path:
        return build_wheel(tmp_path / plat, version="1.0.0", plat=plat)

    out = tmp_path / "bad"
    bad = [
        _rewritten(  # the file name says 1.0.0, METADATA 1.0.1
            built("linux_armv7l"),
            out,
            "rfdemo-1.0.0-py3-none-linux_armv7l.whl",
            METADATA=lambda t: t.replace("Version: 1.0.0", "Version: 1.0.1"),
        ),
        _rewritten(  # the file name's tag is not WHEEL's
            built("macosx_11_0_arm64"), out, "rfdemo-1.0.0-py3-none-linux_s390x.whl"
        ),
        _rewritten(  # a classifier trove-classifiers does not know
            built("linux_ppc64le"),
            out,
            "rfdemo-1.0.0-py3-none-linux_ppc64le.whl",
            METADATA=lambda t: t.replace(
                "Classifier: Programming Language :: Python :: 3",
                "Classifier: Programming Language :: Python :: 3\nClassifier: Made Up :: Thing",
            ),
        ),
        _rewritten(  # a metadata version twine cannot send, and another project's name
            built("linux_riscv64"),
            out,
            "rfdemo-1.0.0-py3-none-linux_riscv64.whl",
            METADATA=lambda t: (
                t.replace("Metadata-Version: 2.1", "Metadata-Version: 3.0")
                .replace("Metadata-Version: 2.2", "Metadata-Version: 3.0")
                .replace("Metadata-Version: 2.4", "Metadata-Version: 3.0")
                .replace("Name: rfdemo", "Name: otherproj")
            ),
        ),
    ]
    store = LocalStore(Path(".relforge/store"))
    for wheel in bad:
        data = wheel.read_bytes()
        key = f"pypi-staging/1.0.0/{wheel.name}"
        assert store.put_if_absent(key, data, hashlib.sha256(data).hexdigest())
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    for extra in ((), ("--execute",)):
        problems = _refused(_upload(run, promoted, pypiserver, *extra), 5)
        text = "\n".join(problems)
        assert "linux_armv7l.whl: METADATA has Version '1.0.1', the file name 1.0.0" in text
        assert "linux_s390x.whl: WHEEL lists the tags py3-none-macosx_11_0_arm64" in text
        assert "linux_ppc64le.whl: classifier 'Made Up :: Thing' is not a trove classifier" in text
        assert "linux_riscv64.whl: METADATA names the project 'otherproj'" in text
        assert "linux_riscv64.whl: METADATA: '3.0' is not a valid metadata version" in text
    assert list(pypiserver.packages.iterdir()) == []
