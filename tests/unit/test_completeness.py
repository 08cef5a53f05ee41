"""The whole-release gate's parts: what the matrix expects, how a state reads, which nightly
versions pruning keeps."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from relforge.matrix.load import load_matrix
from relforge.promote.cells import ChannelCells
from relforge.promote.completeness import (
    NOT_UPLOADED,
    CellState,
    CompletenessReport,
    VersionState,
    expected_cells,
    release_folders,
)
from relforge.promote.index.prune import kept_versions

EXAMPLE = Path(__file__).parents[2] / "matrix" / "example.yaml"


def test_the_example_release_expects_its_eight_wheels_and_its_archive() -> None:
    matrix = load_matrix(str(EXAMPLE))
    cells = expected_cells(ChannelCells(matrix, "test"), "1.0")
    assert len(cells) == 9
    assert sorted(c.package_type for c in cells) == ["archive"] + ["wheel"] * 8
    cells = [c for c in cells if c.package_type == "wheel"]
    assert {c.upload_prefix for c in cells} == {"whl/test/cpu/", "whl/test/cu130/"}
    assert release_folders(ChannelCells(matrix, "release"), ["1.0"]) == {"whl/cpu", "whl/cu130"}
    assert release_folders(ChannelCells(matrix, "test"), ["0.1-not-a-release"]) == set()


def _state(problems: dict[str, str], *, exposed: bool = True, recorded: str = "") -> VersionState:
    cells = tuple(CellState(cell=c, key=f"k/{c}", problem=p) for c, p in problems.items())
    return VersionState(
        version="1.0", releases=("1.0",), cells=cells, exposed=exposed, recorded=recorded
    )


def test_a_state_says_how_many_cells_and_which_are_missing() -> None:
    partial = _state(
        {"a": "", "b": NOT_UPLOADED, "c": "drifted: the store holds sha256 x"}, exposed=False
    )
    assert not partial.complete
    assert partial.line() == (
        "1.0: 1 of 3 cells uploaded and verified; not on the pages until complete; "
        "missing: b; c (drifted: the store holds sha256 x)"
    )
    whole = _state({"a": "", "b": ""})
    assert whole.complete and whole.line().endswith("complete, on the pages")
    unjudged = VersionState(version="0.9", releases=("0.9",), judged=False)
    assert unjudged.complete and "not in the matrix" in unjudged.line()


def test_a_report_warns_about_every_incomplete_version_on_the_pages() -> None:
    shown = _state({"a": "", "b": NOT_UPLOADED}, exposed=True)
    hidden = VersionState(
        version="1.1", releases=("1.0",), cells=(CellState(cell="a", problem=NOT_UPLOADED),),
        exposed=False,
    )  # fmt: skip
    report = CompletenessReport(states=(shown, hidden, _state({"a": ""})), partial=True)
    lines = report.lines()
    assert lines[0].endswith("ON THE PAGES ANYWAY (--partial); missing: b")
    assert "not on the pages until complete" in lines[1]
    assert lines[-1].startswith("WARNING: incomplete version(s) 1.0 are on the pages")
    assert len(lines) == 3  # a whole version is not a line of its own
    # a version that shipped whole and that a grown matrix finds short: no warning
    shipped = _state({"a": "", "b": NOT_UPLOADED}, recorded="whole")
    (line,) = CompletenessReport(states=(shipped,)).lines()
    assert line.endswith("on the pages (it was whole when first advertised); missing: b")
    data = report.to_json()
    assert data["partial"] is True
    versions = data["versions"]
    assert isinstance(versions, list) and versions[1]["missing"] == {"a": NOT_UPLOADED}


def test_nightly_keep_counts_whole_versions_and_keeps_the_one_arriving() -> None:
    days = [Version(f"1.0.0.dev2026010{d}") for d in (5, 4, 3, 2, 1)]  # newest first
    whole = {"1.0.0.dev20260103", "1.0.0.dev20260101"}
    kept = kept_versions(days, 1, lambda v: v in whole)
    # the newest whole one (03) and the two still arriving above it; 02 and 01 go
    assert {str(v) for v in kept} == {"1.0.0.dev20260105", "1.0.0.dev20260104", "1.0.0.dev20260103"}
    # fewer whole versions than keep: nothing is pruned
    assert kept_versions(days, 3, lambda v: v in whole) == set(days)
    # every version whole: the newest `keep`, as before
    assert kept_versions(days, 2, lambda v: True) == set(days[:2])
