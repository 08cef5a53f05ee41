"""Attacks on `relforge site`: where it writes, and what it shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import ConfigError
from relforge.matrix.load import load_matrix
from relforge.site.write import MARKER, write_site
from tests.conftest import Result

Run = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "matrix" / "example.yaml"


def test_an_out_that_is_a_symlink_updates_the_folder_it_points_to(tmp_path: Path) -> None:
    """A served folder is often a link (docs/site -> /var/www/site): the site goes where the
    link points, the link stays a link, and nothing is left beside it."""
    real = tmp_path / "real"
    write_site({"index.html": "one"}, real)
    link = tmp_path / "link"
    link.symlink_to(real)
    write_site({"index.html": "two"}, link)
    assert link.is_symlink() and link.resolve() == real
    assert (real / "index.html").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    assert sorted(p.name for p in real.iterdir()) == [MARKER, "index.html"]


def test_a_release_named_twice_is_on_the_site_once(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "site"
    args = ("site", str(EXAMPLE), "--download-url", "https://x.example", "--out", str(out))
    done = run(*args, "-r", "1.0", "-r", "1.0")
    assert done.code == 0, done.err
    assert "wrote the site of 1.0 to" in done.out
    data = json.loads((out / "published_versions.json").read_text())
    assert [r["release"] for r in data["releases"]] == ["1.0"]


@pytest.mark.parametrize(
    "url",
    [
        "https://x.example/a?b=1",  # the folders would be appended to the query
        "https://x.example/a#frag",
        "https://",  # no host
        "http:///path",
        "file://relative/store",  # a host, not an absolute path
        "file://",
        "https://x.example/a\x1b[31m",  # a terminal escape in the shown command
    ],
)
def test_a_download_url_no_folder_can_hang_off_is_refused(
    run: Run, tmp_path: Path, url: str
) -> None:
    out = tmp_path / "site"
    site = run("site", str(EXAMPLE), "--download-url", url, "--out", str(out))
    assert site.code == 2, site
    assert "--download-url" in site.err
    assert not out.exists()
    docs = run("matrix", "docs", str(EXAMPLE), "--download-url", url)
    assert docs.code == 2, docs
    assert "--download-url" in docs.err


def test_the_matrix_download_url_is_held_to_the_same_rule(
    write: Callable[[str], Path],
) -> None:
    text = EXAMPLE.read_text()
    text = text.replace(
        "  name: hello-native\n",
        "  name: hello-native\n  download_url: https://x.example/a?b=1\n",
        1,
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(write(text))
    assert "project.download_url" in info.value.render()


def test_good_download_urls_still_work(run: Run, tmp_path: Path) -> None:
    for i, url in enumerate(
        ("https://x.example/dl/", "http://127.0.0.1:8080", "file:///srv/store")
    ):
        done = run("site", str(EXAMPLE), "--download-url", url, "--out", str(tmp_path / str(i)))
        assert done.code == 0, done
