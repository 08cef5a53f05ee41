"""Reading index pages back: what relforge writes parses to what it says, hand-written PEP 503
pages parse too, and every way a page can lie about a file is named."""

from __future__ import annotations

from relforge.promote.index.pages import (
    IndexedFile,
    project_html,
    project_json,
    root_html,
    root_json,
)
from relforge.promote.integrity.pagecheck import (
    Want,
    check_links,
    html_links,
    html_projects,
    json_links,
    json_projects,
)

A = "demo-1.0+cpu-py3-none-any.whl"
B = "demo-1.1+cpu-py3-none-any.whl"
FILES = [
    IndexedFile(filename=A, sha256="a" * 64, size=1, metadata_sha256="m" * 64),
    IndexedFile(filename=B, sha256="b" * 64, size=2),
]


def test_our_pages_read_back_as_written() -> None:
    for links in (
        json_links(project_json("demo", FILES, "fp")),
        html_links(project_html("demo", FILES)),
    ):
        assert links is not None
        assert {n: (x.sha256, x.metadata_sha256) for n, x in links.items()} == {
            A: ("a" * 64, "m" * 64),
            B: ("b" * 64, None),
        }
    assert json_projects(root_json(["demo", "other"])) == {"demo", "other"}
    assert html_projects(root_html(["demo", "other"])) == {"demo", "other"}


def test_a_hand_written_page_with_quoted_names() -> None:
    page = (
        b'<html><body><a href="https://cdn.example/x/demo-1.0%2Bcpu-py3-none-any.whl#sha256='
        + b"c" * 64
        + b'">x</a></body></html>'
    )
    links = html_links(page)
    assert links is not None and links[A].sha256 == "c" * 64


def test_unreadable_pages() -> None:
    assert json_links(b"not json") is None
    assert json_links(b'{"files": 3}') is None
    assert html_links(b"\xff\xfe") is None


def test_every_lie_is_named() -> None:
    links = html_links(project_html("demo", FILES))
    assert links is not None
    want = {
        A: Want(sha256="a" * 64, metadata_sha256="n" * 64),
        "demo-2.0-py3-none-any.whl": Want(sha256="d" * 64, metadata_sha256=None),
    }
    present = {A, B, "demo-2.0-py3-none-any.whl"}
    problems = [p.message for p in check_links("k", links, want, present)]
    assert any("core-metadata sha256 " + "m" * 64 in m for m in problems)  # wrong sidecar hash
    assert any(f"advertises {B}, which no manifest vouches for" in m for m in problems)
    assert any("does not list demo-2.0-py3-none-any.whl" in m for m in problems)
    assert any(
        A in m and "store does not hold" in m
        for m in [p.message for p in check_links("k", links, want, {B})]
    )
    wrong = {A: Want(sha256="0" * 64, metadata_sha256=None)}
    (only,) = check_links("k", {A: links[A]}, wrong, {A})
    assert only.message == f"advertises sha256 {'a' * 64} for {A}, the manifest says {'0' * 64}"
    assert (
        check_links("k", {A: links[A]}, {A: Want(sha256="a" * 64, metadata_sha256="m" * 64)}, {A})
        == []
    )
