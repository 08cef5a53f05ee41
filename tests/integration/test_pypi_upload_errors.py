"""`relforge pypi upload` against a real pypiserver when something is wrong: no credentials,
bad ones, a bad or unreachable URL.  One paragraph each, its exit code, and no secret printed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import PyPIServer, free_port
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
SECRET = "s3cret-pass"


@pytest.fixture
def staged(tmp_path: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matrix.yaml").write_text(matrix_text(), encoding="utf-8")
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    publish = ("publish", "matrix.yaml", "--channel", "test", "--manifest", str(manifest))
    assert run(*publish, "--execute").code == 0
    assert run("promote", "matrix.yaml", "--version", "1.0.0", "--execute").code == 0
    assert run("pypi", "stage", "matrix.yaml", "--version", "1.0.0", "--execute").code == 0
    for name in ("TWINE_USERNAME", "TWINE_PASSWORD", "TWINE_REPOSITORY_URL"):
        monkeypatch.delenv(name, raising=False)
    return "matrix.yaml"


def upload(run: Callable[..., Result], url: str, *extra: str) -> Result:
    return run(
        "pypi", "upload", "matrix.yaml", "--version", "1.0.0", "--repository-url", url, *extra
    )


def test_missing_and_wrong_credentials(
    staged: str,
    pypiserver: PyPIServer,
    run: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = upload(run, pypiserver.url, "--execute")
    assert missing.code == 2, missing.out + missing.err
    assert "TWINE_USERNAME" in missing.err and "internal error" not in missing.err
    monkeypatch.setenv("TWINE_USERNAME", pypiserver.username)
    monkeypatch.setenv("TWINE_PASSWORD", "not-the-" + SECRET)
    wrong = upload(run, pypiserver.url, "--execute")
    assert wrong.code == 6 and "403" in wrong.err and "credentials" in wrong.err
    assert SECRET not in wrong.out + wrong.err
    assert list(pypiserver.packages.iterdir()) == []


@pytest.mark.parametrize("url", ["http://[::1", "ftp://example.org/", "not a url", "https://"])
def test_bad_repository_urls_are_usage_errors(
    staged: str, run: Callable[..., Result], url: str
) -> None:
    bad = upload(run, url)
    assert bad.code == 2, bad.out + bad.err
    assert "--repository-url" in bad.err and "internal error" not in bad.err
    index = upload(run, "https://upload.example.org/legacy/", "--index-url", url)
    assert index.code == 2 and "--index-url" in index.err


def test_a_password_in_the_url_is_never_printed(staged: str, run: Callable[..., Result]) -> None:
    url = f"http://releng:{SECRET}@127.0.0.1:{free_port()}/"
    unreachable = upload(run, url)
    assert unreachable.code == 6, unreachable.out + unreachable.err
    assert "cannot read http://127.0.0.1:" in unreachable.err
    assert SECRET not in unreachable.out + unreachable.err


@pytest.mark.parametrize(
    ("index", "needle"),
    [
        ("http://relforge-no-such-index.invalid/simple/", "relforge-no-such-index.invalid"),
        (f"http://127.0.0.1:{free_port()}/simple/", "cannot read http://127.0.0.1:"),
    ],
    ids=["dns", "closed-port"],
)
def test_an_index_that_cannot_be_reached_is_an_environment_fault(
    staged: str, pypiserver: PyPIServer, run: Callable[..., Result], index: str, needle: str
) -> None:
    failed = upload(run, pypiserver.url, "--index-url", index, "--execute")
    assert failed.code == 6, failed.out + failed.err
    lines = failed.err.strip().splitlines()
    assert lines[0].startswith("environment fault: --index-url: ") and needle in lines[0]
    assert len(lines) == 2 and lines[1].startswith("  hint: check the index URL")
    assert "Traceback" not in failed.err and "internal error" not in failed.err
    assert list(pypiserver.packages.iterdir()) == []  # nothing uploaded
