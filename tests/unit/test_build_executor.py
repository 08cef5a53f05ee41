"""The executor's shared per-run state under concurrent cells."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from relforge.builders import executor


def test_cells_starting_together_share_one_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two cells asking for the run's scratch folder at once must get the same one: a second
    folder would be orphaned (cleanup removes only the one it knows), source snapshot included."""
    made = []
    mkdtemp = tempfile.mkdtemp

    def slow_mkdtemp(**kw: Any) -> str:
        time.sleep(0.05)  # widen the window between the check and the assignment
        path: str = mkdtemp(**kw)
        made.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", slow_mkdtemp)  # the module executor uses
    # scratch() reads only plan.state and never reports: a stand-in plan and no reporter.
    run = executor._Run(SimpleNamespace(state=tmp_path), {}, None)  # type: ignore[arg-type]
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(run.scratch())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(set(got)) == 1
    run.cleanup()
    assert list((tmp_path / "work").iterdir()) == []
