from __future__ import annotations

import os
import stat
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


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(
    tmp_path: Path,
) -> None:
    """mkstemp makes 0600 files: a generated page, wheel or manifest must stay readable by the
    web server, the CI user or a group, as a plain write would have made it."""
    old = os.umask(0o022)
    try:
        new = tmp_path / "COMPAT.md"
        with replacing(new) as tmp:
            tmp.write_text("new")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        script = tmp_path / "run.sh"
        script.write_text("old")
        script.chmod(0o750)
        with replacing(script) as tmp:
            tmp.write_text("new")
        assert stat.S_IMODE(script.stat().st_mode) == 0o750
    finally:
        os.umask(old)
