"""`publishing.mirrors` loads strictly: every bad mirror is one ConfigError at file:line:col
naming the key; good mirrors open as named stores (`main` first)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.errors import UsageError
from relforge.matrix.load import load_matrix
from relforge.promote.mirrors import select_stores
from relforge.promote.publishing import open_publishing
from relforge.stores.local import LocalStore
from relforge.stores.s3 import S3Store
from tests.conftest import SMALL
from tests.unit.test_load_errors import line_of, load_error

ANCHOR = "download_url: https://example.org"


def with_mirrors(block: str) -> str:
    return SMALL.replace(ANCHOR, f"{ANCHOR}\npublishing:\n  store: s3://dl/pub\n{block}")


GOOD = """\
  mirrors:
    - name: r2
      url: s3://mirror/pub
      endpoint_url: https://account.r2.cloudflarestorage.com
    - {name: disk, url: "file:///srv/mirror"}
"""


@pytest.mark.parametrize(
    ("block", "words", "at"),
    [
        (
            "  mirrors:\n    - {name: r2}\n",
            ["missing required key 'url'", "mirrors[0]"],
            "{name: r2}",
        ),
        (
            "  mirrors:\n    - {name: r2, url: s3://m, endpoint: x}\n",
            ["unknown key 'endpoint'", "publishing.mirrors[0].endpoint", "endpoint_url"],
            "endpoint: x",
        ),
        (
            "  mirrors:\n    - {name: r2, url: 'ftp://m'}\n",
            ["'ftp://m' is neither file://PATH nor s3://", "publishing.mirrors[0].url"],
            "url: 'ftp://m'",
        ),
        (
            "  mirrors:\n    - {name: main, url: s3://m}\n",
            ["'main' is not a mirror name", "publishing.mirrors[0].name"],
            "name: main",
        ),
        (
            "  mirrors:\n    - {name: a/b, url: s3://m}\n",
            ["'a/b' is not a mirror name"],
            "name: a/b",
        ),
        (
            "  mirrors:\n    - {name: r2, url: s3://m}\n    - {name: r2, url: s3://n}\n",
            ["a second mirror named 'r2'", "publishing.mirrors[1].name"],
            "name: r2, url: s3://n",
        ),
        (
            "  mirrors:\n    - {name: r2, url: s3://dl/pub}\n",
            ["names the main store", "publishing.mirrors[0].url"],
            "url: s3://dl/pub",
        ),
        (
            "  mirrors:\n    - {name: r2, url: s3://m, endpoint_url: 'r2.example'}\n",
            ["'r2.example' is not an http(s) URL", "mirrors[0].endpoint_url"],
            "endpoint_url",
        ),
        ("  mirrors: {name: r2}\n", ["expected a list", "publishing.mirrors"], "mirrors:"),
    ],
)
def test_bad_mirrors_name_the_place(
    write: Callable[[str], Path], block: str, words: list[str], at: str
) -> None:
    text = with_mirrors(block)
    error = load_error(write, text)
    rendered = error.render()
    for word in words:
        assert word in rendered, rendered
    assert f":{line_of(text, at)}:" in rendered, rendered


def test_good_mirrors_open_as_named_stores(write: Callable[[str], Path]) -> None:
    matrix = load_matrix(write(with_mirrors(GOOD)))
    publishing = open_publishing(matrix)
    stores = publishing.named_stores()
    assert stores == publishing.named_stores()  # each store is opened once per command
    assert [s.name for s in stores] == ["main", "r2", "disk"]
    r2 = stores[1].store
    assert isinstance(r2, S3Store) and r2.endpoint_url.startswith("https://account.r2")
    assert isinstance(stores[2].store, LocalStore)
    assert [s.name for s in select_stores(stores, "disk", matrix.file)] == ["disk"]
    with pytest.raises(UsageError, match="no store named 'r3'"):
        select_stores(stores, "r3", matrix.file)
