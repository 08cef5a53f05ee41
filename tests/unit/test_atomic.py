from __future__ import annotations

from pathlib import Path

import pytest

from relforge.atomic import replacing


def test_success_replaces_and_failure_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old")
    with replacing(path) as tmp:
        tmp.write_text("new")
        assert path.read_text() == "old"  # nobody sees the new text before it is whole
    assert path.read_text() == "new"
    with pytest.raises(RuntimeError), replacing(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
