"""Benchmark: expand every release of matrix/pytorch.yaml to JSON.

Goal (issue 2): under 0.3 s.  Measured two ways, best of N:
  - process: a fresh `python -c` that imports relforge, loads, expands and serialises everything
    (what a CI step pays);
  - in-process: load + expand + json.dumps with imports already warm.
Writes benchmarks/results/matrix_expand.json.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "matrix" / "pytorch.yaml"
GOAL_S = 0.3
RUNS = 15

SCRIPT = f"""
import json
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
m = load_matrix({str(MATRIX)!r})
out = {{r: [c.to_json() for c in expand_cells(m, r)] for r in m.releases}}
print(len(json.dumps(out)), sum(len(v) for v in out.values()))
"""


def in_process() -> tuple[float, int]:
    from relforge.matrix.expand import expand_cells
    from relforge.matrix.load import load_matrix

    start = time.perf_counter()
    matrix = load_matrix(MATRIX)
    out = {r: [c.to_json() for c in expand_cells(matrix, r)] for r in matrix.releases}
    json.dumps(out)
    return time.perf_counter() - start, sum(len(v) for v in out.values())


def main() -> None:
    process = []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
        )
        process.append(time.perf_counter() - start)
    size, cells = map(int, done.stdout.split())
    warm = [in_process()[0] for _ in range(RUNS)]
    result = {
        "benchmark": "expand every release of matrix/pytorch.yaml to JSON",
        "cells": cells,
        "json_bytes": size,
        "goal_seconds": GOAL_S,
        "process_seconds": {"best": min(process), "median": statistics.median(process)},
        "in_process_seconds": {"best": min(warm), "median": statistics.median(warm)},
        "meets_goal": statistics.median(process) < GOAL_S,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "runs": RUNS,
    }
    out = ROOT / "benchmarks" / "results" / "matrix_expand.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
