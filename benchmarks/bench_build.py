"""Benchmark: build the 8 cells of matrix/example.yaml (Python 3.10–3.13 × cpu, cu130).

Goals (issue 4):
  - cold: `relforge build --builder host --jobs 2` with an empty build cache is at least 1.7×
    faster than the naive way, a sequential `pip wheel` per cell (fresh source copy, the cell's
    environment, pip's own build isolation);
  - warm: a rebuild with nothing changed takes at most 5 % of the cold build.
The baseline runs first, so pip's and relforge's download caches are warm for both sides; the
relforge build cache (.relforge/cache) starts empty.  Writes benchmarks/results/build.json.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "matrix" / "example.yaml"
SOURCE = ROOT / "examples" / "hello-native"
RESULT = ROOT / "benchmarks" / "results" / "build.json"
GOAL_SPEEDUP = 1.7
GOAL_WARM_RATIO = 0.05
JOBS = 2


def relforge(workdir: Path, *args: str) -> tuple[float, dict[str, Any]]:
    argv = [str(Path(sys.executable).parent / "relforge"), "build", str(MATRIX), "-r", "1.0"]
    argv += ["--builder", "host", "--format", "json", *args]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"relforge build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return elapsed, data


def baseline(workdir: Path) -> float:
    """A sequential `pip wheel` per cell, the way a build script without relforge does it."""
    from relforge.interpreters import find_interpreter
    from relforge.matrix.expand import expand_cells
    from relforge.matrix.load import load_matrix

    cells = expand_cells(load_matrix(MATRIX), "1.0")
    start = time.perf_counter()
    for cell in cells:
        python = find_interpreter(cell.python or "")
        if python is None:
            sys.exit(f"no Python {cell.python} on this machine")
        src = workdir / "baseline" / cell.id
        shutil.copytree(SOURCE, src)
        env = {
            **os.environ,
            **cell.env,
            "RELFORGE_VERSION": f"1.0.0.dev0+{cell.local_version}",
            "MAX_JOBS": str(os.cpu_count() or 1),
        }
        argv = [
            python.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            "wheels",
            str(src),
        ]
        subprocess.run(argv, cwd=workdir, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="relforge-bench-build-"))
    try:
        load_before = os.getloadavg()[0]
        base_s = baseline(workdir)
        cold_s, cold = relforge(workdir, "--jobs", str(JOBS))
        warm_s, warm = relforge(workdir, "--jobs", str(JOBS))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    statuses = {
        name: sorted({str(c["status"]) for c in run["cells"]})
        for name, run in (("cold", cold), ("warm", warm))
    }
    speedup = base_s / cold_s
    ratio = warm_s / cold_s
    result = {
        "benchmark": "build the 8 cells of matrix/example.yaml on the host",
        "cells": len(cold["cells"]),
        "statuses": statuses,
        "baseline_sequential_pip_wheel_seconds": round(base_s, 2),
        "cold_jobs2_seconds": round(cold_s, 2),
        "speedup": round(speedup, 2),
        "goal_speedup": GOAL_SPEEDUP,
        "warm_seconds": round(warm_s, 3),
        "warm_ratio": round(ratio, 4),
        "goal_warm_ratio": GOAL_WARM_RATIO,
        "meets_goals": speedup >= GOAL_SPEEDUP and ratio <= GOAL_WARM_RATIO,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_before": round(load_before, 2),
        "note": "machine shared with other jobs when load_average_before is high",
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
