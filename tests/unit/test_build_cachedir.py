"""Cache folders made once (relforge.cachedir): what the build environments and the
dependency wheels share."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from relforge.cachedir import made_once


def test_a_folder_is_made_once_and_records_how(tmp_path: Path) -> None:
    calls: list[Path] = []

    def make(tmp: Path) -> object:
        calls.append(tmp)
        (tmp / "wheel.whl").write_bytes(b"w")
        return {"files": ["wheel.whl"]}

    folder = tmp_path / "cache" / "abc"
    assert made_once(folder, make) == folder
    assert made_once(folder, make) == folder
    assert len(calls) == 1 and not calls[0].exists()  # made aside, renamed into place
    assert json.loads((folder / ".complete").read_text()) == {"files": ["wheel.whl"]}


def test_a_failed_make_leaves_nothing_and_the_next_call_makes_it(tmp_path: Path) -> None:
    folder = tmp_path / "abc"

    def broken(tmp: Path) -> object:
        (tmp / "half").write_bytes(b"h")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        made_once(folder, broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.lock"]
    made_once(folder, lambda tmp: [])
    assert (folder / ".complete").exists() and not (folder / "half").exists()


def test_a_folder_without_its_marker_is_made_again(tmp_path: Path) -> None:
    folder = tmp_path / "abc"
    folder.mkdir()  # what a run killed before the rename cannot leave, but a person could
    (folder / "stale").write_bytes(b"s")
    made_once(folder, lambda tmp: (tmp / "fresh").write_bytes(b"f") and ["fresh"])
    assert sorted(p.name for p in folder.iterdir()) == [".complete", "fresh"]


def test_concurrent_builds_make_it_once(tmp_path: Path) -> None:
    folder = tmp_path / "abc"
    made: list[int] = []

    def make(tmp: Path) -> object:
        made.append(1)
        time.sleep(0.2)  # the others wait on the lock meanwhile
        return []

    threads = [threading.Thread(target=made_once, args=(folder, make)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1]
