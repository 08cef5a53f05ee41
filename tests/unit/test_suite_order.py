"""The order `make test` hands files out in (tests/conftest.py: LONGEST_FIRST) names real files:
a renamed or deleted file would silently fall back to the end of the run."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FIRST

TESTS = Path(__file__).resolve().parents[1]


def test_every_file_in_the_longest_first_order_exists_once() -> None:
    files = {p.name for p in TESTS.rglob("test_*.py")}
    assert [name for name in LONGEST_FIRST if name not in files] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
