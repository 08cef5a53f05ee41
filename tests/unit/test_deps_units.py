"""The pieces of `relforge deps` that need no network: pip target options per cell, which
published wheel is a cell's, the dependency record, the read-only store server, and the
bucket policy's prefixes."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from relforge.deps.mirrorrecord import MirroredFile, read_record, record_key, write_record
from relforge.deps.serve import serve_store
from relforge.deps.targets import cell_wheel, expand_platform, wheel_targets
from relforge.errors import RefusedError
from relforge.matrix.load import load_matrix
from relforge.matrix.schema import Matrix
from relforge.promote.bucketpolicy import bucket_policy, private_prefixes
from relforge.stores.local import LocalStore
from relforge.stores.objectstore import ObjectInfo, sha256_bytes
from tests.promote_kit import matrix_text


def _matrix(tmp_path: Path, publishing: str = "") -> Matrix:
    path = tmp_path / "m.yaml"
    path.write_text(matrix_text(publishing), encoding="utf-8")
    return load_matrix(path)


def test_manylinux_expands_to_every_older_glibc_and_the_legacy_names() -> None:
    got = expand_platform("manylinux_2_28_x86_64")
    assert got[0] == "manylinux_2_28_x86_64" and got[-1] == "manylinux1_x86_64"
    assert "manylinux_2_17_x86_64" in got and "manylinux2014_x86_64" in got
    assert "manylinux_2_29_x86_64" not in got  # never newer than the cell's
    assert expand_platform("manylinux_2_12_aarch64")[-2:] == [
        "manylinux2010_aarch64",
        "manylinux1_aarch64",
    ]
    assert "manylinux2014_aarch64" not in expand_platform("manylinux_2_12_aarch64")
    assert expand_platform("win_amd64") == ["win_amd64"]
    legacy = expand_platform("manylinux2014_x86_64")  # as pip expands it, and the 2_N names
    assert legacy[0] == "manylinux_2_17_x86_64" and "manylinux2010_x86_64" in legacy


def test_every_wheel_cell_of_the_pytorch_matrix_is_a_target(tmp_path: Path) -> None:
    from tests.conftest import PYTORCH

    matrix = load_matrix(PYTORCH)
    targets = wheel_targets(matrix, "nightly")
    assert len(targets) > 100
    for t in targets:
        assert t.tags(), t.cell.id  # free-threaded cells included: 3.13t is CPython 3.13
    (ft,) = [t for t in targets if t.cell.id == "wheel-linux-x86_64-py3.13t-cpu"][:1]
    assert (ft.python, ft.abi) == ("3.13", "cp313t")


def test_targets_give_pip_the_cells_platform_python_and_abi(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path)
    targets = {t.cell.id: t for t in wheel_targets(matrix, "test")}
    linux = targets["wheel-linux-x86_64-py3.11-cpu"]
    opts = linux.pip_options()
    assert opts[:2] == ["--only-binary=:all:", "--implementation"]
    assert opts[3:5] == ["--python-version", "3.11"] and "cp311" in opts
    assert "manylinux2014_x86_64" in opts and linux.folder == "whl/test/cpu"
    assert targets["wheel-windows-x86_64-py3.11-cpu"].platforms == ("win_amd64",)

    def info(name: str) -> ObjectInfo:
        return ObjectInfo(key=f"whl/test/cpu/{name}", size=1, etag="x")

    files = [
        info("rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl"),
        info("rfdemo-1.0.0+cpu-py3-none-win_amd64.whl"),
        info("rfdemo-0.9.0+cpu-py3-none-manylinux_2_28_x86_64.whl"),  # another release
        info("rfdemo-1.0.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"),  # another Python
        info("six-1.17.0-py2.py3-none-any.whl"),  # not ours
    ]
    got = cell_wheel(matrix, linux, files, None)
    assert got is not None and got.key.endswith("py3-none-manylinux_2_28_x86_64.whl")
    assert "1.0.0" in got.key
    windows = targets["wheel-windows-x86_64-py3.11-cpu"]
    found = cell_wheel(matrix, windows, files, None)
    assert found is not None and found.key.endswith("win_amd64.whl")
    assert cell_wheel(matrix, linux, files, "2.0") is None
    assert cell_wheel(matrix, linux, files[4:], None) is None


def _file(name: str, sha: str, cells: tuple[str, ...]) -> MirroredFile:
    return MirroredFile(
        filename=f"{name}-1.0-py3-none-any.whl",
        name=name,
        version="1.0",
        sha256=sha,
        size=3,
        upstream_url=f"https://up/{name}",
        cells=cells,
    )


def test_the_record_grows_and_never_changes_a_files_hash(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    assert write_record(store, "test", "whl/test/cpu", [_file("b", "1" * 64, ("c1",))])
    assert write_record(store, "test", "whl/test/cpu", [_file("a", "2" * 64, ("c1",))])
    assert write_record(store, "test", "whl/test/cpu", [_file("b", "1" * 64, ("c2",))])
    assert not write_record(store, "test", "whl/test/cpu", [_file("b", "1" * 64, ("c2",))])
    got = read_record(store, "whl/test/cpu")
    assert list(got) == ["a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"]
    assert got["b-1.0-py3-none-any.whl"].cells == ("c1", "c2")
    before = store.get(record_key("whl/test/cpu"))
    with pytest.raises(RefusedError, match="recorded with sha256"):
        write_record(store, "test", "whl/test/cpu", [_file("b", "3" * 64, ("c1",))])
    assert store.get(record_key("whl/test/cpu")) == before
    assert record_key("whl/test/cpu") == "relforge/deps/whl/test/cpu.json"


def test_the_check_server_serves_only_the_channel_folders(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    for key, data in {
        "whl/test/cpu/index.html": b"<html>cpu</html>",
        "whl/test/cpu/x.whl": b"wheel",
        "relforge/manifests/test/m.json": b"{}",
        "whl/test/other/index.html": b"other",
    }.items():
        store.put_if_absent(key, data, sha256_bytes(data))

    def get(url: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return int(r.status), r.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), b""

    with serve_store(store, ["whl/test/cpu"]) as base:
        assert get(f"{base}/whl/test/cpu/") == (200, b"<html>cpu</html>")
        assert get(f"{base}/whl/test/cpu/x.whl") == (200, b"wheel")
        assert get(f"{base}/whl/test/cpu/missing.whl")[0] == 404
        assert get(f"{base}/relforge/manifests/test/m.json")[0] == 404
        assert get(f"{base}/whl/test/other/")[0] == 404
        assert get(f"{base}/whl/test/cpu/../../../relforge/manifests/test/m.json")[0] == 404
        assert get(f"{base}/whl/test/cpu/%2e%2e/other/index.html")[0] == 404


def test_policy_of_the_default_channels_covers_archives_and_keeps_backups_private(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.yaml"
    text = matrix_text("publishing:\n  store: s3://b/dl\n")
    # without a channels section: the default channels, with libtorch/ prefixes
    path.write_text(text[: text.index("channels:")] + text[text.index("publishing:") :])
    matrix = load_matrix(path)
    (statement,) = bucket_policy(matrix)["Statement"]
    assert statement["Resource"] == [
        "arn:aws:s3:::b/dl/libtorch/*",
        "arn:aws:s3:::b/dl/site/*",
        "arn:aws:s3:::b/dl/whl/*",
    ]
    assert private_prefixes(matrix) == ["dl/backup", "dl/pypi-staging", "dl/relforge"]


def test_policy_keeps_a_backup_prefix_of_the_same_bucket_private(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    publishing = "publishing:\n  store: s3://b\n  backup_store: s3://b/whl/backups\n"
    path.write_text(matrix_text(publishing), encoding="utf-8")
    matrix = load_matrix(path)
    assert "whl/backups" in private_prefixes(matrix)
    with pytest.raises(RefusedError, match="would expose whl/backups/"):
        bucket_policy(matrix)  # the release channel's whl/ would serve the backups
    path.write_text(matrix_text(publishing.replace("s3://b/whl", "s3://other/whl")))
    assert private_prefixes(load_matrix(path)) == ["pypi-staging", "relforge"]


def test_each_cell_of_a_dependency_axis_gets_its_own_wheel_not_the_newest(tmp_path: Path) -> None:
    """numpy-abi's two cells share a folder and a platform; the numpy1 cell's closure comes from
    its own wheel (numpy<2), not from the numpy2 wheel that sorts higher."""
    from tests.conftest import REPO

    matrix = load_matrix(REPO / "matrix" / "numpy-abi.yaml")
    targets = {t.cell.id: t for t in wheel_targets(matrix, "test")}
    one = targets["wheel-linux-x86_64-py3.12-cpu-numpy1.26"]
    two = targets["wheel-linux-x86_64-py3.12-cpu-numpy2.x"]
    assert one.folder == two.folder
    files = [
        ObjectInfo(key=f"{one.folder}/{name}", size=1, etag="x")
        for name in (
            "numpy_abi-1.0.0+cpu.numpy1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "numpy_abi-1.0.0+cpu.numpy2-cp312-cp312-manylinux_2_28_x86_64.whl",
            "numpy_abi-1.0.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",  # no axis label: no cell's
        )
    ]
    got_one = cell_wheel(matrix, one, files, None)
    got_two = cell_wheel(matrix, two, files, "1.0.0")
    assert got_one is not None and "+cpu.numpy1-" in got_one.key
    assert got_two is not None and "+cpu.numpy2-" in got_two.key
    assert cell_wheel(matrix, one, files[1:], None) is None  # its own wheel is not published
