"""A project page's files as PEP 691 JSON and PEP 503 HTML give them: hashes, PEP 592 yanked (with
or without a reason), PEP 658/714 metadata (with or without its hash), Requires-Python."""

from __future__ import annotations

import json

import pytest

from relforge.simplepages import PageFile, page_files

PAGE = "https://index.example/simple/torch/"


def test_json_files() -> None:
    body = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "files": [
                {
                    "filename": "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "url": "../../files/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "hashes": {"sha256": "ab"},
                    "requires-python": ">=3.10",
                    "core-metadata": {"sha256": "cd"},
                    "yanked": False,
                },
                {
                    "filename": "torch-2.8.0.tar.gz",
                    "url": "https://f/t.tgz",
                    "hashes": {},
                    "yanked": "bad",
                },
                {
                    "filename": "torch-2.7.0-py3-none-any.whl",
                    "url": "x.whl",
                    "yanked": True,
                    "dist-info-metadata": True,
                },
            ],
        }
    ).encode()
    files = page_files(body, "application/vnd.pypi.simple.v1+json", PAGE)
    assert files == [
        PageFile(
            filename="torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            url="https://index.example/files/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            sha256="ab",
            yanked=None,
            metadata=True,
            metadata_sha256="cd",
            requires_python=">=3.10",
        ),
        PageFile(
            filename="torch-2.8.0.tar.gz",
            url="https://f/t.tgz",
            sha256=None,
            yanked="bad",
            metadata=False,
            metadata_sha256=None,
            requires_python=None,
        ),
        PageFile(
            filename="torch-2.7.0-py3-none-any.whl",
            url=PAGE + "x.whl",
            sha256=None,
            yanked="",
            metadata=True,
            metadata_sha256=None,
            requires_python=None,
        ),
    ]


def test_html_files() -> None:
    body = (
        b'<a href="../../files/a-1.0-py3-none-any.whl#sha256=ab" data-requires-python="&gt;=3.9" '
        b'data-core-metadata="sha256=cd">a</a>\n'
        b'<a href="a-0.9.tar.gz" data-yanked="">a</a>\n'
        b'<a href="a-0.8.tar.gz#md5=00" data-yanked="broken" data-dist-info-metadata="true">a</a>\n'
        b"<a>no link</a>"
    )
    files = page_files(body, "text/html", "https://i/simple/a/")
    assert [(f.filename, f.sha256, f.yanked, f.metadata, f.metadata_sha256) for f in files] == [
        ("a-1.0-py3-none-any.whl", "ab", None, True, "cd"),
        ("a-0.9.tar.gz", None, "", False, None),
        ("a-0.8.tar.gz", None, "broken", True, None),
    ]
    assert files[0].url == "https://i/files/a-1.0-py3-none-any.whl"
    assert files[0].requires_python == ">=3.9"


def test_json_that_is_no_project_page_is_an_error() -> None:
    with pytest.raises(ValueError):
        page_files(b'{"files": 3}', "application/vnd.pypi.simple.v1+json", PAGE)
    with pytest.raises(ValueError):
        page_files(b"<html>", "application/vnd.pypi.simple.v1+json", PAGE)
