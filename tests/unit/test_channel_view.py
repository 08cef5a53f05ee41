"""One frozen view of a channel's vouchers and their completeness judgement, made by one factory,
and the index step a plan carries: a plan without one rebuilds no page, a plan with one rebuilds
exactly its folders."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from relforge.matrix.load import load_matrix
from relforge.promote.channelview import ChannelView, channel_view
from relforge.promote.index.pageset import MARKER
from relforge.promote.plans.storeplan import StorePlan, execute, index_step, render
from relforge.promote.publishing import open_publishing
from relforge.stores.local import LocalStore
from tests.promote_kit import matrix_text
from tests.unit.test_promote_index import METADATA, publish, view

CPU = "whl/cpu/alpha-1.0+cpu-py3-none-any.whl"
CUDA = "whl/cu128/alpha-1.0+cu128-py3-none-any.whl"


def test_a_view_is_frozen_and_its_vouchers_know_nothing_of_the_judgement(
    tmp_path: Path,
) -> None:
    seen = view(LocalStore(tmp_path))
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.completeness = seen.completeness  # type: ignore[misc]  # the assignment refused
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen.vouchers = seen.vouchers.fresh()  # type: ignore[misc]  # the assignment refused
    assert not hasattr(seen.vouchers, "completeness")
    assert seen.completeness.vouchers is seen.vouchers


def test_a_view_whose_judgement_reads_other_vouchers_is_refused(tmp_path: Path) -> None:
    seen = view(LocalStore(tmp_path))
    with pytest.raises(ValueError, match="own vouchers"):
        ChannelView(seen.vouchers.fresh(), seen.completeness)


def test_a_fresh_view_reads_the_manifests_stored_since_and_judges_from_them(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    publish(store, CPU, b"cpu wheel", METADATA)
    first = view(store)
    assert set(first.vouchers.lookup(["1.0"])) == {CPU}
    publish(store, CUDA, b"cuda wheel", METADATA)  # another run stores its manifest
    assert set(first.vouchers.lookup(["1.0"])) == {CPU}  # read once per view
    again = first.fresh()
    assert set(again.vouchers.lookup(["1.0"])) == {CPU, CUDA}
    assert again.vouchers is not first.vouchers and again.completeness is not first.completeness
    assert again.completeness.vouchers is again.vouchers
    judged, before = again.completeness, first.completeness
    assert (judged.cells, judged.partial, judged.workers) == (
        before.cells,
        before.partial,
        before.workers,
    )


def test_the_view_of_a_channel_has_the_matrix_facts_of_that_channel(tmp_path: Path) -> None:
    publishing = f"publishing:\n  store: file://{tmp_path / 'store'}\n"
    matrix = load_matrix(tmp_path / "matrix.yaml", text=matrix_text(publishing))
    here = open_publishing(matrix).channel("test")
    seen = channel_view(here, workers=3, partial=True)
    assert (seen.vouchers.channel, seen.vouchers.project, seen.vouchers.prefix) == (
        "test",
        "rfdemo",
        "whl/test",
    )
    assert seen.root is here.root and seen.completeness.cells is here.cells
    assert seen.completeness.partial and seen.completeness.workers == 3
    other = LocalStore(tmp_path / "other")
    assert channel_view(here, store=other).vouchers.store is other


def test_an_index_step_names_each_folder_once_and_none_without_folders(tmp_path: Path) -> None:
    seen = view(LocalStore(tmp_path))
    step = index_step(["whl/cu128", "whl/cpu", "whl/cu128"], seen)
    assert step is not None and step.folders == ("whl/cpu", "whl/cu128") and step.view is seen
    assert index_step([], seen) is None


def _published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalStore:
    """A store with a vouched wheel in each of two folders and no page yet."""
    monkeypatch.chdir(tmp_path)  # the plan's journal (.relforge/journal) goes there
    store = LocalStore(tmp_path / "store")
    publish(store, CPU, b"cpu wheel", METADATA)
    publish(store, CUDA, b"cuda wheel", METADATA)
    return store


def _pages(store: LocalStore, folder: str) -> bool:
    return (store.root / folder / MARKER).exists() or (store.root / folder / "alpha").exists()


def test_a_plan_without_an_index_step_rebuilds_no_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _published(tmp_path, monkeypatch)
    plan = StorePlan(command="test-no-index", title="nothing to index", batches=(), store=store)
    lines: list[str] = []
    render(plan, lines.append)
    assert plan.index is None and plan.index_folders == ()
    assert not any("re-index" in line for line in lines)
    done = execute(plan, lines.append)
    assert done.indexed == () and done.recorded == ()
    assert not _pages(store, "whl/cpu") and not _pages(store, "whl/cu128")


def test_a_plan_with_an_index_step_rebuilds_exactly_its_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _published(tmp_path, monkeypatch)
    plan = StorePlan(
        command="test-index",
        title="index one folder",
        batches=(),
        store=store,
        index=index_step(["whl/cpu"], view(store)),
    )
    lines: list[str] = []
    render(plan, lines.append)
    assert "then re-index 1 folder(s)" in lines[1] and lines[2] == "  index     whl/cpu/"
    done = execute(plan, lines.append)
    assert [p.folder for p in done.indexed] == ["whl/cpu"]
    assert _pages(store, "whl/cpu") and (store.root / "whl/cpu/alpha/index.json").is_file()
    assert not _pages(store, "whl/cu128")  # vouched for, but not a folder of the step
