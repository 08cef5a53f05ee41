"""The command that runs relforge's own pip for another interpreter's environment.

`pip --python TARGET …` starts pip under relforge's interpreter only to start it again under
TARGET, through the file pip ships for that (`__pip-runner__.py`: this copy of pip, imported by
TARGET without anything else of relforge's environment).  Running that file with TARGET directly
is the same command without the first start — a fifth to a third of a second of CPU per install,
and relforge installs into throwaway venvs for every runtime check and build environment.  A pip
without the file (a zipapp, a future layout) gets the `--python` form.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path


def pip_for(python: str | Path) -> list[str]:
    """The argv of relforge's pip acting on the environment of the interpreter `python`."""
    runner = _runner()
    if runner is None:
        return [sys.executable, "-m", "pip", "--python", str(python)]
    return [str(python), str(runner)]


@functools.cache
def _runner() -> Path | None:
    spec = importlib.util.find_spec("pip")
    if spec is None or spec.origin is None:
        return None
    runner = Path(spec.origin).parent / "__pip-runner__.py"
    return runner if runner.is_file() else None
