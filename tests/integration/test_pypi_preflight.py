"""PyPI's limits and upload checks, before the first upload, against a real pypiserver: a file
over the per-file limit, a release over the project quota (the project's usage read from the
index), a file name that disagrees with METADATA or WHEEL, an unknown classifier, a metadata
version twine cannot send — each refused with every problem listed, and nothing uploaded (or
staged)."""

from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import RefusedError
from relforge.matrix import load_matrix
from relforge.promote import UploadRequest, plan_pypi_upload, upload_release
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


def _one_file_on_the_index(
    promoted: Path, pypiserver: PyPIServer, run: Callable[..., Result], when: datetime.datetime
) -> tuple[str, str]:
    """1.0.0 staged (two files); the first of them uploaded at `when` (its Last-Modified on
    pypiserver).  Returns (the uploaded name, the other name)."""
    assert run("pypi", "stage", str(promoted), "--version", "1.0.0", "--execute").code == 0
    first, second = sorted(STAGING.iterdir())
    twine = [sys.executable, "-m", "twine", "upload", "--non-interactive"]
    subprocess.run([*twine, "--repository-url", pypiserver.url, str(first)], check=True)
    os.utime(pypiserver.packages / first.name, (when.timestamp(), when.timestamp()))
    return first.name, second.name


def test_files_added_to_a_release_first_uploaded_14_days_ago_are_refused(
    promoted: Path,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PyPI's rule since July 2026, at its boundary (the clock is given): 14 days after the
    first upload of 1.0.0 its missing file is refused, 13 days 23 hours after it is uploaded;
    then a rerun, uploading only files already there, is a no-op however late."""
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    first = datetime.datetime(2026, 7, 1, 12, 0, tzinfo=datetime.timezone.utc)
    there, missing = _one_file_on_the_index(promoted, pypiserver, run, first)
    plan = plan_pypi_upload(
        UploadRequest(
            matrix=load_matrix(promoted),
            version="1.0.0",
            repository_url=pypiserver.url,
            index_url=None,
        )
    )
    assert [i.state for i in plan.items] == [
        "upload" if i.filename == missing else "identical" for i in plan.items
    ]
    said: list[str] = []
    for late in (
        datetime.timedelta(days=14),
        datetime.timedelta(days=14, seconds=1),
        datetime.timedelta(days=400),
    ):
        for execute in (False, True):
            with pytest.raises(RefusedError) as caught:
                upload_release(plan, said.append, execute=execute, now=first + late)
            message, hint = caught.value.message, caught.value.hint or ""
            assert caught.value.exit_code == 5
            assert "1 problem(s) PyPI or twine would refuse; nothing was uploaded" in message
            assert f"1.0.0 was first uploaded to {pypiserver.url}/simple/ on 2026-07-01 " in message
            assert f"12:00 UTC, {late.days} days ago: PyPI refuses new files for a release " in (
                message
            )
            assert "first uploaded more than 14 days ago (since July 2026)" in message
            assert f"1 new file(s) ({missing})" in message and there not in message
            assert "release a new version" in hint and "post-release" in hint
    assert sorted(p.name for p in pypiserver.packages.iterdir()) == [there]

    done = upload_release(
        plan, said.append, execute=True, now=first + datetime.timedelta(days=13, hours=23)
    )
    assert done.uploaded == 1
    assert sorted(p.name for p in pypiserver.packages.iterdir()) == sorted([there, missing])
    again = plan_pypi_upload(
        UploadRequest(
            matrix=load_matrix(promoted),
            version="1.0.0",
            repository_url=pypiserver.url,
            index_url=None,
        )
    )
    assert {i.state for i in again.items} == {"identical"}
    much_later = first + datetime.timedelta(days=400)
    assert upload_release(again, said.append, execute=True, now=much_later).uploaded == 0


def test_the_upload_command_refuses_a_release_older_than_14_days(
    promoted: Path,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command on the real clock: a release first uploaded 20 days ago takes no new file;
    the same index a day after the first upload does."""
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", pypiserver.password)
    now = datetime.datetime.now(datetime.timezone.utc)
    there, missing = _one_file_on_the_index(
        promoted, pypiserver, run, now - datetime.timedelta(days=20)
    )
    for extra in ((), ("--execute",)):
        (problem,) = _refused(_upload(run, promoted, pypiserver, *extra), 1)
        assert "1.0.0 was first uploaded to http://127.0.0.1:" in problem
        assert "days ago: PyPI refuses new files for a release first uploaded more than 14 " in (
            problem
        )
    assert [p.name for p in pypiserver.packages.iterdir()] == [there]
    day = (now - datetime.timedelta(days=1)).timestamp()
    os.utime(pypiserver.packages / there, (day, day))
    done = _upload(run, promoted, pypiserver, "--execute")
    assert done.code == 0, done.out + done.err
    assert sorted(p.name for p in pypiserver.packages.iterdir()) == sorted([there, missing])
