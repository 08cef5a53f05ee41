"""Two runs writing one folder at once: the marker of one over the pages of the other is a race
that the next plan rebuilds from the stored manifests; a committed page changed by hand (one no
stored manifest explains) is refused (exit 5), whatever else changed."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import RefusedError
from relforge.promote.index.folder import apply_folder, plan_folder, refuse_drift
from relforge.promote.index.pageset import MARKER
from relforge.stores.local import LocalStore
from tests.unit.test_promote_index import index, publish, view

A1 = "whl/cpu/alpha-1.0-py3-none-any.whl"
B1 = "whl/cpu/beta-1.0-py3-none-any.whl"


class Killed(BaseException):
    """Stands for a SIGKILL of the run (nothing of relforge catches it)."""


class RacingStore(LocalStore):
    """The local store, running `before_marker(folder)` (once) just before a page-set marker is
    written: the moment between a run's page writes and its commit.  `then_kill`: after that
    marker, the next write of a key containing it raises Killed."""

    def __init__(
        self, root: Path, before_marker: Callable[[str], None], then_kill: str | None = None
    ) -> None:
        super().__init__(root)
        self.before_marker: Callable[[str], None] | None = before_marker
        self.then_kill = then_kill
        self.raced = False

    def write(self, key: str, data: bytes, content_type: str) -> None:
        if self.raced and self.then_kill is not None and self.then_kill in key:
            raise Killed(key)
        if self.before_marker is not None and key.endswith("/" + MARKER):
            hook, self.before_marker = self.before_marker, None
            hook(key.rsplit("/", 1)[0])
            self.raced = True
        super().write(key, data, content_type)


def committed(tmp_path: Path, project: str) -> tuple[str, str]:
    """(sha256 the marker names, sha256 of the page) of a project's JSON page."""
    marker = json.loads((tmp_path / "whl/cpu" / MARKER).read_text())
    page = (tmp_path / "whl/cpu" / project / "index.json").read_bytes()
    return marker["projects"][project]["json_sha256"], hashlib.sha256(page).hexdigest()


def race(tmp_path: Path) -> None:
    """Two full rebuilds of whl/cpu: the rival writes its pages and marker between this
    run's page writes and its marker, so this run's marker commits pages that are not there."""
    store = LocalStore(tmp_path)
    store.delete(f"whl/cpu/{MARKER}")  # both runs rebuild every project

    def rival(folder: str) -> None:
        apply_folder(store, plan_folder(store, "whl/cpu", view(store)))

    mine = plan_folder(store, "whl/cpu", view(store))
    apply_folder(RacingStore(tmp_path, rival), mine)


def test_the_marker_of_one_run_over_the_pages_of_another_is_rebuilt(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    publish(store, A1, b"a1")
    publish(store, B1, b"b1")
    index(store)
    race(tmp_path)
    for project in ("alpha", "beta"):
        want, got = committed(tmp_path, project)
        assert want != got  # the state the field test left: refused forever before

    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.raced == ("alpha", "beta") and plan.tampered == ()
    assert plan.rebuild == ("alpha", "beta") and plan.changed
    assert plan.carried == 0  # nothing is carried from a page the marker did not commit
    refuse_drift([plan], store)  # no refusal
    apply_folder(store, plan)
    for project in ("alpha", "beta"):
        want, got = committed(tmp_path, project)
        assert want == got
    again = plan_folder(store, "whl/cpu", view(store))
    assert not again.changed and again.raced == ()


def tamper(tmp_path: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    page = tmp_path / "whl/cpu/alpha/index.json"
    data = json.loads(page.read_text())
    replaced = edit(data)
    page.write_text(json.dumps(data if replaced is None else replaced))


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (
            lambda p: p["files"][0]["hashes"].update(sha256="0" * 64),
            "lists alpha-1.0-py3-none-any.whl with sha256 0000",
        ),
        (
            lambda p: p["files"][0].update(size=1),
            "(1 B); the manifest",
        ),
        (
            lambda p: p["files"].append(
                {"filename": "alpha-9.0-py3-none-any.whl", "hashes": {"sha256": "1" * 64}}
            ),
            "not a page relforge wrote",  # the file is not in its record of sources
        ),
        (lambda p: p.update(name="beta"), "not a page relforge wrote for alpha"),
        (lambda p: {"meta": {"api-version": "1.1"}}, "not a JSON page relforge wrote"),
    ],
)
def test_a_committed_page_changed_by_hand_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], object], why: str
) -> None:
    store = LocalStore(tmp_path)
    publish(store, A1, b"a1")
    publish(store, B1, b"b1")
    index(store)
    tamper(tmp_path, edit)
    before = (tmp_path / "whl/cpu/alpha/index.json").read_bytes()
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.raced == () and len(plan.tampered) == 1
    assert why in plan.tampered[0], plan.tampered
    with pytest.raises(RefusedError, match="no stored manifest explains") as caught:
        refuse_drift([plan], store)
    assert caught.value.exit_code == 5 and "whl/cpu/alpha/index.json" in caught.value.message
    with pytest.raises(RefusedError):
        apply_folder(store, plan)
    assert (tmp_path / "whl/cpu/alpha/index.json").read_bytes() == before


def test_a_hand_edit_after_a_race_is_still_refused(tmp_path: Path) -> None:
    """A race does not launder a page: after one, an edited page is refused, the raced one is
    not (and nothing is written)."""
    store = LocalStore(tmp_path)
    publish(store, A1, b"a1")
    publish(store, B1, b"b1")
    index(store)
    race(tmp_path)
    tamper(tmp_path, lambda p: p["files"][0]["hashes"].update(sha256="0" * 64))
    plan = plan_folder(store, "whl/cpu", view(store))
    assert plan.raced == ("beta",) and len(plan.tampered) == 1
    assert "/whl/cpu/alpha/index.json: lists" in plan.tampered[0]
    with pytest.raises(RefusedError, match="no stored manifest explains"):
        refuse_drift([plan], store)


def test_the_local_stores_hash_record_survives_two_writers_of_one_key(tmp_path: Path) -> None:
    """The sha256 a local store records for a page is the one of the bytes it wrote: another
    writer replacing the file before the record is written does not make the record lie."""

    class Overtaken(LocalStore):
        def _record(
            self, key: str, path: Path, sha256: str, st: os.stat_result | None = None
        ) -> None:
            if key == "p/index.json" and path.read_bytes() == b"mine":
                LocalStore(tmp_path).write(key, b"theirs", "application/json")
            super()._record(key, path, sha256, st)

    Overtaken(tmp_path).write("p/index.json", b"mine", "application/json")
    assert (tmp_path / "p/index.json").read_bytes() == b"theirs"
    assert LocalStore(tmp_path).sha256("p/index.json") == hashlib.sha256(b"theirs").hexdigest()
