"""The index and the yank record (PEP 592): a yanked file is marked on both pages, only the
project it belongs to goes stale, pages without a yank keep their fingerprint (no rebuild on
upgrade), and a damaged record is an error, never a page without the yank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relforge.errors import RefusedError
from relforge.promote.index.folder import plan_folder
from relforge.promote.index.pages import IndexedFile, project_html, project_json
from relforge.promote.yanked import read_yanked, record_key, write_yanked
from relforge.stores.local import LocalStore
from tests.unit.test_promote_index import METADATA, index, publish, view

ALPHA = "whl/cpu/alpha-1.0+cpu-py3-none-any.whl"
BETA = "whl/cpu/beta-2.0-py3-none-any.whl"


def test_an_empty_reason_is_still_a_yank() -> None:
    f = IndexedFile(filename="a-1.0-py3-none-any.whl", sha256="0" * 64, size=1, yanked="")
    assert 'data-yanked=""' in project_html("a", [f]).decode()
    assert json.loads(project_json("a", [f], "fp"))["files"][0]["yanked"] is True
    plain = IndexedFile(filename="a-1.0-py3-none-any.whl", sha256="0" * 64, size=1)
    assert "yanked" not in project_html("a", [plain]).decode()
    assert "yanked" not in json.loads(project_json("a", [plain], "fp"))["files"][0]


def test_a_yank_makes_only_its_project_stale_and_an_unyank_restores_the_fingerprint(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    publish(store, ALPHA, b"alpha", METADATA)
    publish(store, BETA, b"beta")
    index(store)
    before = plan_folder(store, "whl/cpu", view(store))
    assert not before.changed

    write_yanked(store, "release", {ALPHA: "broken"})
    stale = plan_folder(store, "whl/cpu", view(store))
    assert stale.rebuild == ("alpha",) and stale.unchanged == ("beta",)
    index(store)
    page = json.loads((tmp_path / "whl/cpu/alpha/index.json").read_text())
    assert page["files"][0]["yanked"] == "broken"
    assert 'data-yanked="broken"' in (tmp_path / "whl/cpu/alpha/index.html").read_text()
    assert not plan_folder(store, "whl/cpu", view(store)).changed

    write_yanked(store, "release", {ALPHA: "another reason"})  # a new reason is a change
    assert plan_folder(store, "whl/cpu", view(store)).rebuild == ("alpha",)

    write_yanked(store, "release", {})
    assert not (tmp_path / record_key("release")).exists()
    back = plan_folder(store, "whl/cpu", view(store))
    assert back.rebuild == ("alpha",)
    assert back.records["alpha"].fingerprint == before.records["alpha"].fingerprint
    index(store)
    assert "yanked" not in (tmp_path / "whl/cpu/alpha/index.json").read_text()


def test_a_yank_record_of_another_channel_does_not_apply(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    publish(store, ALPHA, b"alpha", METADATA)
    write_yanked(store, "test", {ALPHA: "yanked in test only"})
    index(store)
    assert "yanked" not in (tmp_path / "whl/cpu/alpha/index.json").read_text()


@pytest.mark.parametrize("body", [b"not json", b'{"files": ["a"]}', b"{}"])
def test_a_damaged_record_is_an_error_not_a_silent_unyank(tmp_path: Path, body: bytes) -> None:
    store = LocalStore(tmp_path)
    publish(store, ALPHA, b"alpha", METADATA)
    store.write(record_key("release"), body, "application/json")
    with pytest.raises(RefusedError, match="is not a yank record"):
        read_yanked(store, "release")
    with pytest.raises(RefusedError, match="is not a yank record"):
        plan_folder(store, "whl/cpu", view(store))
