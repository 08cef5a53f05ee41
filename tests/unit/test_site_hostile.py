"""Attacks on `relforge site`: where it writes, and what it shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

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
