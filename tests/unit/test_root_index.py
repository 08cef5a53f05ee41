"""Channel-root pages (`<prefix>/<project>/`): every file of every variant folder of the
channel, with the variant pages' hashes, metadata, Requires-Python and yanks; never another
channel's folders; one name for two different files refused; a project named like a folder
refused; an interrupted set finished on rerun; opting out removes them; verify catches edits."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from relforge.errors import ConfigError, RefusedError
from relforge.manifest import ArtifactManifest, ManifestEntry
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import ChannelName
from relforge.promote.cells import ChannelCells
from relforge.promote.channel import manifest_bytes, manifest_key
from relforge.promote.index import pageset, rootpages
from relforge.promote.index.folder import apply_folder, plan_folder
from relforge.promote.index.rootpages import ROOT_MARKER, apply_root, plan_root
from relforge.promote.integrity.pagecheck import Want
from relforge.promote.integrity.rootcheck import check_channel_root
from relforge.promote.rootspec import RootSpec, root_spec
from relforge.promote.yanked import write_yanked
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectStore
from tests.promote_kit import matrix_text
from tests.unit.test_promote_index import view

META = b"Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\nRequires-Python: >=3.10\n\n"
CPU = "alpha-1.0+cpu-py3-none-any.whl"
CUDA = "alpha-1.0+cu128-py3-none-any.whl"
NUMPY = "numpy-2.0-py3-none-any.whl"
SPEC = RootSpec(
    channel="release",
    prefix="whl",
    folders=("whl/cpu", "whl/cu128"),
    reserved={"cpu": "releases.1.0.accelerators.cpu", "test": "channels.test.prefix"},
)


def publish(
    store: LocalStore, channel: str, prefix: str, files: dict[str, tuple[bytes, bytes | None]]
) -> None:
    """Put files (key relative to `prefix`: `cpu/x.whl`) and a manifest of `channel` vouching
    for them, as publish/promote do."""
    entries = []
    for rel, (data, meta) in files.items():
        sub, name = rel.rsplit("/", 1)
        store.put_if_absent(f"{prefix}/{rel}", data, hashlib.sha256(data).hexdigest())
        if meta is not None:
            key = f"{prefix}/{rel}.metadata"
            store.put_if_absent(key, meta, hashlib.sha256(meta).hexdigest())
        entries.append(
            ManifestEntry(
                cell_id=f"{sub}-{name}",
                file=f"dist/{name}",
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                version=name.split("-")[1],
                package_type="wheel",
                variant=sub,
                upload_subfolder=sub,
                metadata_sha256=hashlib.sha256(meta).hexdigest() if meta is not None else None,
                metadata_size=len(meta) if meta is not None else None,
            )
        )
    by_version: dict[str, list[ManifestEntry]] = {}
    for entry in entries:  # stored manifests are grouped by the files' public version
        by_version.setdefault(entry.version.partition("+")[0], []).append(entry)
    for version, group in by_version.items():
        manifest = ArtifactManifest(project="alpha", release="1.0", channel=channel)
        data = manifest_bytes(manifest.with_entries(group))
        key = manifest_key(manifest.with_entries(group), version)
        store.put_if_absent(key, data, hashlib.sha256(data).hexdigest())


def index(store: ObjectStore, folders: tuple[str, ...], channel: ChannelName = "release") -> None:
    prefix = folders[0].rsplit("/", 1)[0]
    v = view(store, channel, prefix)
    for folder in folders:
        apply_folder(store, plan_folder(store, folder, v))


def release(store: LocalStore) -> None:
    """cpu and cu128 wheels of alpha, a numpy wheel mirrored into both folders, and a test
    channel (whl/test/cpu, nested in the release prefix) holding a 2.0 nobody released."""
    publish(
        store,
        "release",
        "whl",
        {
            f"cpu/{CPU}": (b"cpu wheel", META),
            f"cu128/{CUDA}": (b"cuda wheel", META),
            f"cpu/{NUMPY}": (b"numpy", None),
            f"cu128/{NUMPY}": (b"numpy", None),
        },
    )
    publish(store, "test", "whl/test", {"cpu/alpha-2.0+cpu-py3-none-any.whl": (b"two", META)})
    index(store, SPEC.folders)
    index(store, ("whl/test/cpu",), "test")


def root(store: ObjectStore, spec: RootSpec = SPEC) -> rootpages.RootPlan:
    plan = plan_root(store, spec)
    apply_root(store, plan)
    return plan


def test_root_pages_list_every_variant_file_as_the_variant_pages_do(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    write_yanked(store, "release", {f"whl/cu128/{CUDA}": "bad build"})
    index(store, SPEC.folders)
    plan = root(store)
    assert sorted(plan.projects) == ["alpha", "numpy"]

    page = json.loads((tmp_path / "whl/alpha/index.json").read_text())
    by_name = {f["filename"]: f for f in page["files"]}
    assert set(by_name) == {CPU, CUDA}  # the test channel's 2.0 (whl/test/cpu) is not here
    for sub, name in (("cpu", CPU), ("cu128", CUDA)):
        variant = json.loads((tmp_path / f"whl/{sub}/alpha/index.json").read_text())
        (theirs,) = variant["files"]
        assert by_name[name] == {**theirs, "url": f"../{sub}/{theirs['url'][3:]}"}
    assert by_name[CUDA]["yanked"] == "bad build" and "yanked" not in by_name[CPU]
    html = (tmp_path / "whl/alpha/index.html").read_text()
    sha = hashlib.sha256(b"cpu wheel").hexdigest()
    assert f'href="../cpu/alpha-1.0%2Bcpu-py3-none-any.whl#sha256={sha}"' in html
    assert html.count('data-requires-python="&gt;=3.10"') == 2
    assert html.count(f'data-core-metadata="sha256={hashlib.sha256(META).hexdigest()}"') == 2
    assert html.count('data-yanked="bad build"') == 1
    assert "whl/test" not in html and "../test/" not in html
    # the mirrored numpy wheel is in both folders with one sha256: listed once
    numpy = json.loads((tmp_path / "whl/numpy/index.json").read_text())
    assert [(f["filename"], f["url"]) for f in numpy["files"]] == [(NUMPY, f"../cpu/{NUMPY}")]
    top = json.loads((tmp_path / "whl/index.json").read_text())
    assert top["projects"] == [{"name": "alpha"}, {"name": "numpy"}]
    assert '<a href="alpha/">alpha</a>' in (tmp_path / "whl/index.html").read_text()
    # the test channel's own root lists its own folder only
    test_plan = root(store, RootSpec(channel="test", prefix="whl/test", folders=("whl/test/cpu",)))
    assert [f.filename for f in test_plan.projects["alpha"].files] == [
        "alpha-2.0+cpu-py3-none-any.whl"
    ]
    marker = json.loads((tmp_path / "whl/test" / ROOT_MARKER).read_text())
    assert marker["fingerprint"] == test_plan.fingerprint


def test_a_rerun_is_a_no_op_and_a_variant_change_makes_the_root_stale(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    root(store)
    again = plan_root(store, SPEC)
    assert not again.stale and "up to date" in again.describe()
    assert apply_root(store, again) is False
    publish(store, "release", "whl", {"cpu/alpha-1.1+cpu-py3-none-any.whl": (b"1.1", None)})
    assert not plan_root(store, SPEC).stale  # not on a variant page yet: not on the root
    index(store, SPEC.folders)
    stale = plan_root(store, SPEC)
    assert stale.stale
    apply_root(store, stale)
    assert "alpha-1.1+cpu" in (tmp_path / "whl/alpha/index.html").read_text()
    (tmp_path / "whl/numpy/index.html").unlink()  # a page gone: written again
    assert plan_root(store, SPEC).stale


def test_one_name_for_two_different_files_is_refused_naming_both_folders(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    publish(
        store,
        "release",
        "whl",
        {f"cpu/{NUMPY}": (b"numpy", None), f"cu128/{NUMPY}": (b"another numpy", None)},
    )
    index(store, SPEC.folders)
    with pytest.raises(RefusedError) as caught:
        plan_root(store, SPEC)
    assert "whl/cpu/" in caught.value.message and "whl/cu128/" in caught.value.message
    assert caught.value.exit_code == 5
    assert not (tmp_path / "whl/numpy").exists() and not (tmp_path / "whl/index.html").exists()


def test_a_project_named_like_a_variant_folder_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(matrix_text().replace("name: rfdemo", "name: cu128"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        root_spec(ChannelCells(load_matrix(str(path)), "release"))
    assert caught.value.key == "releases.1.0.accelerators.cu128"
    assert caught.value.where is not None and caught.value.where.line > 0  # file:line
    path.write_text(matrix_text().replace("name: rfdemo", "name: Test"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"channels\.test\.prefix"):
        root_spec(ChannelCells(load_matrix(str(path)), "release"))
    assert root_spec(
        ChannelCells(load_matrix(str(path)), "test")
    ).folders  # whl/test/ has no such folder
    opted_out = matrix_text().replace("name: rfdemo", "name: cu128")
    opted_out = opted_out.replace(
        "release: {version_scheme: final, prefix: whl}",
        "release: {version_scheme: final, prefix: whl, root_index: false}",
    )
    path.write_text(opted_out, encoding="utf-8")
    assert root_spec(ChannelCells(load_matrix(str(path)), "release")).enabled is False


def test_a_mirrored_dependency_named_like_a_folder_is_a_config_error(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    publish(store, "release", "whl", {"cu128/cpu-1.0-py3-none-any.whl": (b"x", None)})
    index(store, SPEC.folders)
    with pytest.raises(ConfigError, match=r"releases\.1\.0\.accelerators\.cpu"):
        plan_root(store, SPEC)


def test_an_interrupted_root_set_is_finished_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    release(store)
    root(store)
    publish(store, "release", "whl", {"cu128/alpha-1.1+cu128-py3-none-any.whl": (b"1.1", None)})
    index(store, SPEC.folders)
    real = pageset.write_page
    calls = []

    def dying(s: ObjectStore, key: str, data: bytes, content_type: str) -> None:
        calls.append(key)
        if len(calls) == 3:
            raise OSError("killed")
        real(s, key, data, content_type)

    monkeypatch.setattr(rootpages, "write_page", dying)
    with pytest.raises(OSError):
        apply_root(store, plan_root(store, SPEC, workers=1), workers=1)
    monkeypatch.setattr(rootpages, "write_page", real)
    marker = json.loads((tmp_path / "whl" / ROOT_MARKER).read_text())
    assert marker["fingerprint"] == ""  # the set is not committed
    finish = plan_root(store, SPEC)
    assert finish.stale
    apply_root(store, finish)
    assert "alpha-1.1+cu128" in (tmp_path / "whl/alpha/index.html").read_text()
    assert not plan_root(store, SPEC).stale


def test_opting_out_removes_the_root_pages_and_leaves_the_variant_pages(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    root(store)
    off = RootSpec(channel="release", prefix="whl", folders=SPEC.folders, enabled=False)
    plan = plan_root(store, off)
    assert plan.stale and plan.remove == ("alpha", "numpy") and "remove" in plan.describe()
    apply_root(store, plan)
    whl = tmp_path / "whl"
    left = [str(p.relative_to(whl)) for p in whl.rglob("*") if p.is_file()]
    assert not any(p.startswith(("alpha", "numpy", "index", ROOT_MARKER)) for p in left)
    assert (tmp_path / "whl/cpu/alpha/index.html").exists()
    assert (tmp_path / "whl/test/cpu/alpha/index.html").exists()
    assert not plan_root(store, off).stale  # nothing left to remove


def test_a_variant_page_edited_by_hand_is_not_copied_to_the_root(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    page = tmp_path / "whl/cpu/alpha/index.json"
    page.write_text(page.read_text().replace(hashlib.sha256(b"cpu wheel").hexdigest(), "0" * 64))
    with pytest.raises(RefusedError, match="not the page its folder's page set committed"):
        plan_root(store, SPEC)
    assert not (tmp_path / "whl/alpha").exists()


def _want(store: LocalStore) -> tuple[dict[str, dict[str, Want]], dict[str, set[str]]]:
    meta = hashlib.sha256(META).hexdigest()
    want = {
        "whl/cpu": {
            CPU: Want(sha256=hashlib.sha256(b"cpu wheel").hexdigest(), metadata_sha256=meta)
        },
        "whl/cu128": {
            CUDA: Want(sha256=hashlib.sha256(b"cuda wheel").hexdigest(), metadata_sha256=meta)
        },
    }
    return want, {"whl/cpu": {CPU}, "whl/cu128": {CUDA}}


def test_verify_finds_a_root_page_edited_by_hand(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    root(store)
    want, present = _want(store)
    assert check_channel_root(store, SPEC, "alpha", want, present) == []
    html = tmp_path / "whl/alpha/index.html"
    good = html.read_text()
    cpu_sha = hashlib.sha256(b"cpu wheel").hexdigest()
    # a forged hash
    html.write_text(good.replace(cpu_sha, "1" * 64))
    found = check_channel_root(store, SPEC, "alpha", want, present)
    assert [p.message for p in found] == [
        f"advertises sha256 {'1' * 64} for ../cpu/alpha-1.0%2Bcpu-py3-none-any.whl, "
        f"the manifest says {cpu_sha}"
    ]
    # a link into another channel's folder (the unreleased 2.0 of whl/test/cpu)
    html.write_text(
        good.replace("../cpu/alpha-1.0%2Bcpu", "../test/cpu/alpha-2.0%2Bcpu").replace(
            cpu_sha, hashlib.sha256(b"two").hexdigest()
        )
    )
    messages = [p.message for p in check_channel_root(store, SPEC, "alpha", want, present)]
    assert any("outside the release channel's variant folders" in m for m in messages)
    assert f"does not list {CPU}" in messages
    # a file left off the JSON page
    html.write_text(good)
    page = tmp_path / "whl/alpha/index.json"
    data = json.loads(page.read_text())
    data["files"] = [f for f in data["files"] if f["filename"] != CUDA]
    page.write_text(json.dumps(data))
    found = check_channel_root(store, SPEC, "alpha", want, present)
    assert [(p.key, p.message) for p in found] == [
        ("whl/alpha/index.json", f"does not list {CUDA}")
    ]
    # with the root index switched off, a root page left behind is a finding
    off = RootSpec(channel="release", prefix="whl", folders=SPEC.folders, enabled=False)
    assert len(check_channel_root(store, off, "alpha", want, present)) == 2


def test_a_project_gone_from_every_folder_leaves_the_root(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    release(store)
    root(store)
    for sub in ("cpu", "cu128"):
        store.delete(f"whl/{sub}/{NUMPY}")
    index(store, SPEC.folders)
    plan = plan_root(store, SPEC)
    assert plan.stale and plan.remove == ("numpy",) and "drop numpy" in plan.describe()
    apply_root(store, plan)
    assert not (tmp_path / "whl/numpy/index.html").exists()
    assert not (tmp_path / "whl/numpy/index.json").exists()
    top = json.loads((tmp_path / "whl/index.json").read_text())
    assert top["projects"] == [{"name": "alpha"}]
    marker = json.loads((tmp_path / "whl" / ROOT_MARKER).read_text())
    assert marker["projects"] == ["alpha"]


def test_folders_whose_wheels_share_file_names_are_a_config_error_before_any_upload(
    tmp_path: Path,
) -> None:
    """Without a local label, each numpy axis value gets its own folder and the same file name;
    the root page lists files by name, so the matrix is refused with file:line:key."""
    from tests.conftest import REPO

    text = (REPO / "matrix" / "numpy-abi.yaml").read_text(encoding="utf-8")
    text = text.replace("../examples/numpy-abi", str(REPO / "examples" / "numpy-abi"))
    unlabelled = text.replace('local_label: "+{variant}.numpy{numpy_major}"', 'local_label: ""')
    path = tmp_path / "m.yaml"
    path.write_text(unlabelled, encoding="utf-8")
    matrix = load_matrix(str(path))  # the matrix itself is fine: one folder per axis value
    with pytest.raises(ConfigError) as caught:
        root_spec(ChannelCells(matrix, "test"))
    err = caught.value
    assert err.key == "channels.test.root_index"
    assert "whl/test/cpu-numpy1.26/" in str(err) and "whl/test/cpu-numpy2.x/" in str(err)
    assert err.where is not None and err.where.line == 1 + unlabelled[
        : unlabelled.index('local_label: ""')
    ].count("\n")  # no root_index key: the label is what to change
    opted_out = unlabelled.replace(
        "test: {version_scheme: final, prefix: whl/test}",
        "test: {version_scheme: final, prefix: whl/test, root_index: false}",
    )
    path.write_text(opted_out, encoding="utf-8")
    assert root_spec(ChannelCells(load_matrix(str(path)), "test")).enabled is False
    with pytest.raises(ConfigError, match="release channel"):
        root_spec(
            ChannelCells(load_matrix(str(path)), "release")
        )  # only the test channel opted out
    path.write_text(text, encoding="utf-8")  # the label tells the two wheels apart
    assert root_spec(ChannelCells(load_matrix(str(path)), "test")).enabled


def test_pytorch_27_full_wheel_folder_is_left_off_the_root_pages() -> None:
    """2.7's cu126_full copy has the cu126 wheel's file name; its include rule keeps the folder
    off the channel root, which lists every other variant folder."""
    from tests.conftest import PYTORCH

    matrix = load_matrix(str(PYTORCH))
    for channel in ("nightly", "test", "release"):
        spec = root_spec(ChannelCells(matrix, channel))
        assert spec.enabled and not any(f.endswith("_full") for f in spec.folders)
        assert any(f.endswith("/cu126") for f in spec.folders)


def test_an_include_kept_off_the_root_needs_its_own_folder(tmp_path: Path) -> None:
    from tests.conftest import PYTORCH

    text = PYTORCH.read_text(encoding="utf-8")
    old = 'set: {bundle_libraries: true, upload_subfolder: "{variant}_full", root_index: false}'
    assert old in text
    path = tmp_path / "pytorch.yaml"
    path.write_text(text.replace(old, "set: {bundle_libraries: true, root_index: false}"))
    with pytest.raises(ConfigError) as caught:
        load_matrix(str(path))
    assert caught.value.key == "releases.2.7.include[0].set.root_index"
    assert caught.value.where is not None
    assert caught.value.where.line == 1 + text[: text.index(old)].count("\n")
