"""PEP 503/691 pages built from the stored manifests: content, hashes from the manifest (never
from unknown bytes), drift refused, unvouched files left off, incremental rebuilds that carry
unchanged files, empty folders, and page sets that an interrupted run leaves incomplete."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from relforge.errors import EnvironmentFault, RefusedError
from relforge.manifest import ArtifactManifest, ManifestEntry
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import ChannelName
from relforge.promote.cells import ChannelCells
from relforge.promote.channel import manifest_bytes, manifest_key
from relforge.promote.channelview import ChannelView, view_of
from relforge.promote.index.folder import apply_folder, plan_folder
from relforge.promote.index.pageset import MARKER
from relforge.promote.vouch import Vouchers
from relforge.signing import Trust
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectStore
from tests.promote_kit import matrix_text

METADATA = b"Metadata-Version: 2.1\nName: alpha\nVersion: 1.0+cpu\nRequires-Python: >=3.10\n\n"


def put(store: LocalStore, key: str, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    store.put_if_absent(key, data, digest)
    return digest


def vouch(store: LocalStore, files: dict[str, tuple[bytes, bytes | None]]) -> None:
    """Store a release-channel manifest (one per version) vouching for {key: (bytes,
    sidecar)} as `promote` does."""
    by_version: dict[str, list[ManifestEntry]] = {}
    for key, (data, meta) in files.items():
        folder, name = key.rsplit("/", 1)
        version = name.split("-")[1]
        entry = ManifestEntry(
            cell_id=name,
            file=f"dist/{name}",
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            version=version,
            package_type="wheel",
            variant=folder.rsplit("/", 1)[1],
            upload_subfolder=folder.rsplit("/", 1)[1],
            metadata_sha256=hashlib.sha256(meta).hexdigest() if meta is not None else None,
            metadata_size=len(meta) if meta is not None else None,
        )
        by_version.setdefault(version.partition("+")[0], []).append(entry)
    for version, entries in by_version.items():
        manifest = ArtifactManifest(project="alpha", release="1.0", channel="release")
        manifest = manifest.with_entries(entries)
        data = manifest_bytes(manifest)
        put(store, manifest_key(manifest, version), data)


# The matrix the pages are judged by lacks release 1.0, the stored manifests' release: no
# version is judged and every vouched one is advertised (these tests are about the pages;
# tests/integration/test_whole_release.py about what the judgement leaves off them).
UNJUDGED = load_matrix("unjudged.yaml", text=matrix_text().replace('"1.0":', '"0.9":'))


def view(store: ObjectStore, channel: ChannelName = "release", prefix: str = "whl") -> ChannelView:
    """The channel's view of the manifests `vouch` stored (of project alpha)."""
    vouchers = Vouchers(store, channel=channel, project="alpha", prefix=prefix, trust=Trust())
    return view_of(vouchers, ChannelCells(UNJUDGED, channel))


def publish(store: LocalStore, key: str, data: bytes, meta: bytes | None = None) -> None:
    put(store, key, data)
    if meta is not None:
        put(store, key + ".metadata", meta)
    vouch(store, {key: (data, meta)})


def index(store: LocalStore, folder: str = "whl/cpu") -> None:
    apply_folder(store, plan_folder(store, folder, view(store)))


def test_pages_list_every_vouched_file_with_its_manifest_hash_metadata_and_python(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    whl = "whl/cpu/alpha-1.0+cpu-py3-none-any.whl"
    publish(store, whl, b"wheel bytes", METADATA)
    file_sha = hashlib.sha256(b"wheel bytes").hexdigest()
    meta_sha = hashlib.sha256(METADATA).hexdigest()
    publish(store, "whl/cpu/beta_pkg-2.0-py3-none-any.whl", b"beta")
    put(store, "whl/cpu/Gamma_Pkg-2.0.tar.gz", b"sdist nobody vouches for")
    put(store, "whl/cpu/notes.txt", b"not a distribution")
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.rebuild == ("alpha", "beta-pkg")
    assert plan.unvouched == ("whl/cpu/Gamma_Pkg-2.0.tar.gz",) and plan.drift == ()
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
    marker = json.loads((tmp_path / "whl/cpu" / MARKER).read_text())
    assert page["_relforge"]["generation"] == marker["generation"]
    assert f'content="{marker["generation"]}"' in html
    root = json.loads((tmp_path / "whl/cpu/index.json").read_text())
    assert root["projects"] == [{"name": "alpha"}, {"name": "beta-pkg"}]
    root_html = (tmp_path / "whl/cpu/index.html").read_text()
    assert '<a href="beta-pkg/">beta-pkg</a>' in root_html and "gamma" not in root_html.lower()
    assert not (tmp_path / "whl/cpu/gamma-pkg").exists()


def test_only_changed_projects_are_rebuilt_and_unchanged_files_are_carried(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    publish(store, "whl/cpu/alpha-1.0-py3-none-any.whl", b"a1")
    publish(store, "whl/cpu/beta-1.0-py3-none-any.whl", b"b1")
    index(store)
    again = plan_folder(store, "whl/cpu", view(store))
    assert not again.changed and again.unchanged == ("alpha", "beta")

    publish(store, "whl/cpu/beta-1.1-py3-none-any.whl", b"b2")
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.rebuild == ("beta",) and plan.unchanged == ("alpha",)
    assert (plan.verified, plan.carried) == (1, 1)  # beta 1.0 comes from the committed page
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
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.remove == ("alpha",)
    apply_folder(store, plan)
    assert not alpha_page.exists()
    assert "alpha" not in (tmp_path / "whl/cpu/index.html").read_text()


def test_an_empty_folder_gets_an_index(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    plan = plan_folder(store, "whl/test/cu130", view(store))
    assert plan.changed and plan.projects == ()
    apply_folder(store, plan)
    assert json.loads((tmp_path / "whl/test/cu130/index.json").read_text())["projects"] == []
    assert not plan_folder(store, "whl/test/cu130", view(store)).changed


def test_drifted_bytes_are_never_advertised(tmp_path: Path) -> None:
    """The bytes changed after publication: the page keeps the manifest's hash, and the
    folder is refused, rather than re-hashing and advertising the drifted bytes."""
    store = LocalStore(tmp_path)
    key = "whl/cpu/alpha-1.0-py3-none-any.whl"
    publish(store, key, b"original")
    index(store)
    before = {p: p.read_bytes() for p in (tmp_path / "whl/cpu").rglob("index.*")}
    (tmp_path / key).unlink()
    (tmp_path / key).write_bytes(b"replaced!")  # same size, other bytes
    plan = plan_folder(store, "whl/cpu", view(store))
    assert len(plan.drift) == 1 and key in plan.drift[0]
    assert hashlib.sha256(b"replaced!").hexdigest() in plan.drift[0]
    with pytest.raises(RefusedError, match="not the bytes their manifest vouches for"):
        apply_folder(store, plan)
    assert {p: p.read_bytes() for p in (tmp_path / "whl/cpu").rglob("index.*")} == before
    drifted = hashlib.sha256(b"replaced!").hexdigest()
    assert all(drifted not in p.read_text() for p in (tmp_path / "whl").rglob("*.*"))


def test_a_tampered_sidecar_is_drift(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    key = "whl/cpu/alpha-1.0+cpu-py3-none-any.whl"
    publish(store, key, b"wheel", METADATA)
    sidecar = tmp_path / (key + ".metadata")
    sidecar.unlink()
    sidecar.write_bytes(METADATA.replace(b"\n\n", b"\nRequires-Dist: evil\n\n"))
    plan = plan_folder(store, "whl/cpu", view(store))
    assert len(plan.drift) == 1 and key + ".metadata" in plan.drift[0]
    assert not (tmp_path / "whl/cpu/alpha").exists()


def test_a_manifest_stored_later_makes_a_file_advertised(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    key = "whl/cpu/alpha-1.0-py3-none-any.whl"
    put(store, key, b"not yet vouched for")
    index(store)
    assert not (tmp_path / "whl/cpu/alpha").exists()
    assert not plan_folder(store, "whl/cpu", view(store)).changed  # checked once
    vouch(store, {key: (b"not yet vouched for", None)})
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.rebuild == ("alpha",)
    apply_folder(store, plan)
    assert (tmp_path / "whl/cpu/alpha/index.html").is_file()


def test_a_page_edited_by_hand_is_not_carried(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    publish(store, "whl/cpu/alpha-1.0-py3-none-any.whl", b"a1")
    index(store)
    page = tmp_path / "whl/cpu/alpha/index.json"
    evil = "0" * 64
    good = hashlib.sha256(b"a1").hexdigest()
    page.write_text(page.read_text().replace(good, evil))
    publish(store, "whl/cpu/alpha-1.1-py3-none-any.whl", b"a2")
    plan = plan_folder(store, "whl/cpu", view(store))
    assert (plan.verified, plan.carried) == (2, 0)
    apply_folder(store, plan)
    assert evil not in page.read_text() and good in page.read_text()


def test_an_interrupted_page_set_is_finished_by_the_next_run(tmp_path: Path) -> None:
    """The HTML write fails after the JSON page was written (here: a directory is in the
    way): the set is incomplete, and the next run finishes it instead of calling it current."""
    store = LocalStore(tmp_path)
    publish(store, "whl/cpu/alpha-1.0-py3-none-any.whl", b"a1")
    index(store)
    publish(store, "whl/cpu/alpha-1.1-py3-none-any.whl", b"a2")
    blocker = tmp_path / "whl/cpu/alpha/index.html"
    blocker.unlink()
    blocker.mkdir()
    with pytest.raises(EnvironmentFault, match=r"the store is damaged: .* is a folder where"):
        index(store)
    assert "alpha-1.1" in (tmp_path / "whl/cpu/alpha/index.json").read_text()
    shutil.rmtree(blocker)
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.rebuild == ("alpha",)
    apply_folder(store, plan)
    assert "alpha-1.1" in blocker.read_text()
    assert not plan_folder(store, "whl/cpu", view(store)).changed
    # a page deleted behind our back makes its project stale, too
    blocker.unlink()
    assert plan_folder(store, "whl/cpu", view(store)).rebuild == ("alpha",)
