"""Golden files of the shipped matrices' expansion: any change to a cell shows up in review.

Refresh after an intended change with `make golden` and read the diff before committing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from tests.conftest import EXAMPLE, PYTORCH, REPO

GOLDEN = REPO / "tests" / "golden"
CASES = [(PYTORCH, r) for r in ("2.6", "2.7", "2.8", "2.9")] + [(EXAMPLE, "1.0")]


@pytest.mark.parametrize(("matrix_file", "release"), CASES, ids=[f"{f.stem}-{r}" for f, r in CASES])
def test_expansion_matches_golden(matrix_file: Path, release: str) -> None:
    golden = GOLDEN / f"{matrix_file.stem}-{release}.json"
    cells = [c.to_json() for c in expand_cells(load_matrix(matrix_file), release)]
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert [c["id"] for c in cells] == [c["id"] for c in expected], "run `make golden`"
    for got, want in zip(cells, expected, strict=True):
        assert got == want, f"{got['id']} changed; run `make golden` and review the diff"
