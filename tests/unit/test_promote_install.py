"""publish's last lines: which index URL serves what it uploaded, and the commands."""

from __future__ import annotations

from relforge.promote.install import index_urls, install_lines
from relforge.promote.rootspec import RootSpec

FOLDERS = ("whl/test/cpu", "whl/test/cu128")


def test_a_channel_with_root_pages_is_installed_from_its_prefix() -> None:
    root = RootSpec(channel="test", prefix="whl/test", folders=FOLDERS)
    assert index_urls("https://dl.example.org", root, FOLDERS) == (
        "https://dl.example.org/whl/test",
    )


def test_without_root_pages_each_folder_is_an_index_of_its_own() -> None:
    root = RootSpec(channel="test", prefix="whl/test", folders=FOLDERS, enabled=False)
    assert index_urls("https://d", root, FOLDERS) == (
        "https://d/whl/test/cpu",
        "https://d/whl/test/cu128",
    )


def test_a_folder_kept_off_the_root_pages_gets_its_own_url_beside_the_root() -> None:
    root = RootSpec(channel="test", prefix="whl/test", folders=FOLDERS[:1])
    assert index_urls("https://d", root, FOLDERS) == (
        "https://d/whl/test",
        "https://d/whl/test/cu128",
    )
    assert index_urls("https://d", root, FOLDERS[1:]) == ("https://d/whl/test/cu128",)


def test_no_base_url_says_what_to_set_instead_of_printing_a_made_up_url() -> None:
    root = RootSpec(channel="test", prefix="whl/test", folders=FOLDERS)
    assert index_urls("", root, FOLDERS) == ()
    [line] = install_lines("rfdemo", "test", ())
    assert "project.download_url is not set" in line and "http" not in line


def test_each_url_gets_a_pip_and_a_uv_command_and_the_dry_run_says_so() -> None:
    lines = install_lines("rfdemo", "test", ("https://d/a", "https://d/b"), dry_run=True)
    assert install_lines("rfdemo", "test", ("https://d/a",), pages_later=True)[0] == (
        "install from the test channel (after `relforge index`):"
    )
    assert lines == [
        "install from the test channel (after --execute):",
        "  index: https://d/a",
        "  pip: pip3 install rfdemo --index-url https://d/a",
        "  uv: uv pip install rfdemo --default-index https://d/a",
        "  index: https://d/b",
        "  pip: pip3 install rfdemo --index-url https://d/b",
        "  uv: uv pip install rfdemo --default-index https://d/b",
    ]
