"""PEP 503/691 pages: content, verified hashes, incremental rebuilds, empty folders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from relforge.promote.index import apply_folder, plan_folder
from relforge.promote.local import LocalStore

METADATA = b"Metadata-Version: 2.1\nName: alpha\nVersion: 1.0+cpu\nRequires-Python: >=3.10\n\n"


def put(store: LocalStore, key: str, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    store.put_if_absent(key, data, digest)
    return digest


def test_pages_list_every_file_with_its_hash_metadata_and_python(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    whl = "whl/cpu/alpha-1.0+cpu-py3-none-any.whl"
    file_sha = put(store, whl, b"wheel bytes")
    meta_sha = put(store, whl + ".metadata", METADATA)
    put(store, "whl/cpu/Beta_Pkg-2.0.tar.gz", b"sdist")
    put(store, "whl/cpu/notes.txt", b"not a distribution")
    plan = plan_folder(store, "whl/cpu")
    assert plan.rebuild == ("alpha", "beta-pkg")
    apply_folder(store, plan)

    html = (tmp_path / "whl/cpu/alpha/index.html").read_text()
    assert f'href="../alpha-1.0%2Bcpu-py3-none-any.whl#sha256={file_sha}"' in html
    assert 'data-requires-python="&gt;=3.10"' in html
    assert f'data-dist-info-metadata="sha256={meta_sha}"' in html
    assert f'data-core-metadata="sha256={meta_sha}"' in html
    page = json.loads((tmp_path / "whl/cpu/alpha/index.json").read_text())
    assert page["meta"] == {"api-version": "1.1"}
    assert page["files"] == [
        {
            "filename": "alpha-1.0+cpu-py3-none-any.whl",
            "url": "../alpha-1.0%2Bcpu-py3-none-any.whl",
            "hashes": {"sha256": file_sha},
            "size": len(b"wheel bytes"),
            "requires-python": ">=3.10",
            "core-metadata": {"sha256": meta_sha},
            "dist-info-metadata": {"sha256": meta_sha},
        }
    ]
    root = json.loads((tmp_path / "whl/cpu/index.json").read_text())
    assert root["projects"] == [{"name": "alpha"}, {"name": "beta-pkg"}]
    assert '<a href="beta-pkg/">beta-pkg</a>' in (tmp_path / "whl/cpu/index.html").read_text()


def test_only_changed_projects_are_rebuilt(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    put(store, "whl/cpu/alpha-1.0-py3-none-any.whl", b"a1")
    put(store, "whl/cpu/beta-1.0-py3-none-any.whl", b"b1")
    apply_folder(store, plan_folder(store, "whl/cpu"))
    again = plan_folder(store, "whl/cpu")
    assert not again.changed and again.unchanged == ("alpha", "beta")

    put(store, "whl/cpu/beta-1.1-py3-none-any.whl", b"b2")
    plan = plan_folder(store, "whl/cpu")
    assert plan.rebuild == ("beta",) and plan.unchanged == ("alpha",)
    alpha_page = tmp_path / "whl/cpu/alpha/index.json"
    stamp = alpha_page.stat().st_mtime_ns
    apply_folder(store, plan)
    assert alpha_page.stat().st_mtime_ns == stamp
    files = json.loads((tmp_path / "whl/cpu/beta/index.json").read_text())["files"]
    assert [f["filename"] for f in files] == [
        "beta-1.0-py3-none-any.whl",
        "beta-1.1-py3-none-any.whl",
    ]

    store.delete("whl/cpu/alpha-1.0-py3-none-any.whl")
    plan = plan_folder(store, "whl/cpu")
    assert plan.remove == ("alpha",)
    apply_folder(store, plan)
    assert not alpha_page.exists()
    assert "alpha" not in (tmp_path / "whl/cpu/index.html").read_text()


def test_an_empty_folder_gets_an_index(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    plan = plan_folder(store, "whl/test/cu130")
    assert plan.changed and plan.projects == ()
    apply_folder(store, plan)
    assert json.loads((tmp_path / "whl/test/cu130/index.json").read_text())["projects"] == []
    assert not plan_folder(store, "whl/test/cu130").changed


def test_the_hash_listed_is_the_bytes_hash(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    key = "whl/cpu/alpha-1.0-py3-none-any.whl"
    put(store, key, b"original")
    (tmp_path / key).write_bytes(b"replaced by hand")  # the recorded hash no longer applies
    apply_folder(store, plan_folder(store, "whl/cpu"))
    page = json.loads((tmp_path / "whl/cpu/alpha/index.json").read_text())
    assert page["files"][0]["hashes"]["sha256"] == hashlib.sha256(b"replaced by hand").hexdigest()
