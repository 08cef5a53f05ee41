"""LocalStore: create-if-absent, verified hashes, atomic pages; the store URL registry."""

from __future__ import annotations

import hashlib
import os
import textwrap
from pathlib import Path

import pytest

from relforge.errors import ConfigError, RefusedError
from relforge.stores.local import LocalStore
from relforge.stores.registry import STORES, StoreOptions, open_store
from tests.promote_kit import matrix_text


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_put_if_absent_never_replaces(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    assert store.put_if_absent("a/b.whl", b"one", sha(b"one"))
    assert not store.put_if_absent("a/b.whl", b"two", sha(b"two"))
    assert store.get("a/b.whl") == b"one"
    assert store.sha256("a/b.whl") == sha(b"one")
    assert store.sha256("a/missing.whl") is None
    assert [i.key for i in store.list("a/")] == ["a/b.whl"]


def test_bytes_that_do_not_match_their_hash_are_not_written(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    with pytest.raises(RefusedError, match="nothing was written"):
        store.put_if_absent("a/b.whl", b"one", sha(b"other"))
    assert store.head("a/b.whl") is None
    assert list((tmp_path / "s" / "a").iterdir()) == []  # no temporary left behind


def test_hash_is_recomputed_when_the_file_changed_behind_our_back(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "s")
    store.put_if_absent("f.whl", b"one", sha(b"one"))
    path = tmp_path / "s" / "f.whl"
    path.write_bytes(b"tampered")
    os.utime(path, ns=(1, 1))
    assert store.sha256("f.whl") == sha(b"tampered")


def test_copy_verifies_and_pages_are_replaced(tmp_path: Path) -> None:
    src, dst = LocalStore(tmp_path / "src"), LocalStore(tmp_path / "dst")
    src.put_if_absent("x/f.whl", b"data", sha(b"data"))
    assert dst.copy_if_absent(src, "x/f.whl", "y/f.whl", sha(b"data"))
    assert not dst.copy_if_absent(src, "x/f.whl", "y/f.whl", sha(b"data"))
    with pytest.raises(RefusedError):
        dst.copy_if_absent(src, "x/f.whl", "y/g.whl", sha(b"something else"))
    assert dst.head("y/g.whl") is None
    dst.write("y/index.html", b"<a>1</a>", "text/html")
    dst.write("y/index.html", b"<a>2</a>", "text/html")
    assert dst.get("y/index.html") == b"<a>2</a>"
    dst.write("y/", b"ignored: a folder page is its index.html here", "text/html")
    assert (tmp_path / "dst" / "y").is_dir()


def test_store_urls(tmp_path: Path) -> None:
    assert set(STORES) == {"file", "s3"}
    local = open_store(f"file://{tmp_path}/store")
    assert isinstance(local, LocalStore) and local.root == tmp_path / "store"
    s3 = open_store("s3://bucket/some/prefix/")
    assert s3.url == "s3://bucket/some/prefix"
    for bad in ("ftp://x", "bucket/prefix", "s3://", "file://"):
        with pytest.raises(ConfigError, match=r"publishing\.store"):
            open_store(bad)


def test_publishing_s3_attempts_reaches_every_s3_store_of_the_matrix(tmp_path: Path) -> None:
    from relforge.matrix.load import load_matrix
    from relforge.matrixstores import backup_store, main_store, mirror_stores
    from relforge.stores.s3 import S3Store

    publishing = textwrap.dedent("""\
        publishing:
          store: s3://bucket/dl
          backup_store: s3://bucket-backup/tags
          mirrors: [{name: r2, url: s3://mirror/dl}]
        """)
    path = tmp_path / "matrix.yaml"
    for text, attempts in ((publishing, 8), (publishing + "  s3_attempts: 3\n", 3)):
        path.write_text(matrix_text(text), encoding="utf-8")
        matrix = load_matrix(path)
        stores = [main_store(matrix), backup_store(matrix)]
        stores += [named.store for named in mirror_stores(matrix)]
        for store in stores:
            assert isinstance(store, S3Store) and store.policy.attempts == attempts, store.url


@pytest.mark.parametrize("endpoint", ["not-a-url", "http://[::1"])
def test_a_bad_s3_endpoint_url_is_a_config_error(endpoint: str) -> None:
    store = open_store("s3://bucket/prefix", StoreOptions(s3_endpoint_url=endpoint))
    with pytest.raises(ConfigError, match=r"publishing\.s3_endpoint_url") as info:
        store.head("whl/x.whl")
    assert info.value.exit_code == 2 and endpoint in info.value.message
