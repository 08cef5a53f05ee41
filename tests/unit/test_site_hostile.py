"""Attacks on `relforge site`: where it writes, and what it shows."""

from __future__ import annotations

from pathlib import Path

from relforge.site.write import MARKER, write_site


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
