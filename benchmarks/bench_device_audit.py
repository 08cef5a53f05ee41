"""Benchmark: what the device-code audit (issue 33) costs `wheel inspect` on a real CUDA wheel.

Goal: `wheel inspect` of torch-2.14.1 (CUDA; libtorch_cuda.so carries 332 MB of fat binaries in
475 containers, 2,975 entries) with the audit on stays within 10 % of its time without it.
Both are fresh processes of the same code, alternated, `RUNS` times each: "off" empties the
ELF reader's table of device-code sections before inspecting (nothing else differs).  Also
records the audit's findings (the SASS/PTX lists per file) so the run shows it read them.
Writes benchmarks/results/device_audit.json.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILES = Path(os.environ.get("RELFORGE_BENCH_WHEELS", "/opt/pypi-more/files"))
WHEEL = "torch-2.14.1-*.whl"
RUNS = int(os.environ.get("RELFORGE_BENCH_RUNS", "5"))
GOAL = 1.10

PROBE = """
import json, sys
import relforge.validate.elf as elf
if sys.argv[2] == "off":
    elf.DEVICE_READERS.clear()
from relforge.validate import inspect_wheel
found = inspect_wheel(__import__("pathlib").Path(sys.argv[1]), jobs=2)
device = {e.path: e.info.device.summary() for e in found.facts.elves
          if e.info is not None and e.info.device is not None}
print(json.dumps(device))
"""


def run_once(wheel: Path, mode: str) -> tuple[float, float, dict[str, str]]:
    """Wall and CPU seconds of one fresh inspection, and what it found."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(wheel), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu, found


def main() -> None:
    wheels = sorted(FILES.glob(WHEEL))
    if not wheels:
        sys.exit(f"no {WHEEL} in {FILES} (set RELFORGE_BENCH_WHEELS)")
    wheel = wheels[0]
    times: dict[str, list[float]] = {"on": [], "off": []}
    cpus: dict[str, list[float]] = {"on": [], "off": []}
    found: dict[str, str] = {}
    run_once(wheel, "off")  # warm the page cache
    for _ in range(RUNS):
        for mode in ("off", "on"):
            wall, cpu, seen = run_once(wheel, mode)
            times[mode].append(wall)
            cpus[mode].append(cpu)
            if mode == "on":
                found = seen
            else:
                assert not seen, "the audit ran while off"
    best = {m: min(v) for m, v in times.items()}
    median = {m: statistics.median(v) for m, v in times.items()}
    ratio_best = best["on"] / best["off"]
    ratio_median = median["on"] / median["off"]
    result: dict[str, Any] = {
        "benchmark": "relforge wheel inspect with and without the device-code audit "
        "(fresh processes, alternated, one run)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "wheel": wheel.name,
        "size_bytes": wheel.stat().st_size,
        "runs": RUNS,
        "seconds": {m: {"best": best[m], "median": median[m], "runs": times[m]} for m in times},
        "cpu_seconds": {m: {"best": min(cpus[m]), "runs": cpus[m]} for m in cpus},
        "ratio_best": round(ratio_best, 3),
        "ratio_median": round(ratio_median, 3),
        "goal_ratio": GOAL,
        "meets_goal": ratio_median <= GOAL,
        "device_code_found": found,
    }
    out = ROOT / "benchmarks" / "results" / "device_audit.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "device_code_found"}, indent=2))


if __name__ == "__main__":
    main()
