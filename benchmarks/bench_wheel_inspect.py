"""Benchmark: `relforge wheel inspect` against `auditwheel show`, side by side, on real wheels.

Goal (issue 6): at least 20x faster than auditwheel on torch-2.14.1 (CUDA, 555 MB, 1 GB of ELF).
For each wheel found in /opt/pypi-more/files/ this measures, in one run:
  - relforge: a fresh `relforge wheel inspect WHEEL --format json` process (best and median);
  - auditwheel: a fresh `auditwheel show WHEEL` process;
  - floor: inflating every ELF member completely (what a reader that must see all bytes pays);
  - how many ELF bytes relforge inflated (in-process run).
Writes benchmarks/results/wheel_inspect.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = Path(os.environ.get("RELFORGE_BENCH_WHEELS", "/opt/pypi-more/files"))
WHEELS = ("torch-2.14.1-*.whl", "nvidia_cudnn_cu13-*.whl", "nvidia_cublas-*.whl")
GOAL = 20.0
RUNS = int(os.environ.get("RELFORGE_BENCH_RUNS", "3"))
BIN = Path(sys.executable).parent


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 4):
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def floor_seconds(wheel: Path) -> tuple[float, int]:
    """Inflate every ELF member completely, discarding the output."""
    from relforge.validate.wheel import WheelArchive

    with WheelArchive(wheel) as archive:
        members = archive.elf_members()
        start = time.perf_counter()
        total = 0
        for member in members:
            for chunk in archive.chunks(member, 4 << 20):
                total += len(chunk)
        return time.perf_counter() - start, total


def inflated_bytes(wheel: Path) -> tuple[int, int]:
    """(bytes relforge inflated to read the ELF members, total ELF bytes)."""
    from relforge.validate.elf import read_elf
    from relforge.validate.wheel import WheelArchive

    with WheelArchive(wheel) as archive:
        inflated = total = 0
        for member in archive.elf_members():
            source = archive.source(member)
            read_elf(source)
            inflated += getattr(source, "inflated", member.size)
            total += member.size
    return inflated, total


def main() -> None:
    found = [p for pattern in WHEELS for p in sorted(FILES.glob(pattern))[:1]]
    if not found:
        raise SystemExit(f"no benchmark wheels in {FILES} ({', '.join(WHEELS)})")
    results = []
    for wheel in found:
        ours = [timed([str(BIN / "relforge"), "wheel", "inspect", str(wheel), "--format", "json"])
                for _ in range(RUNS)]  # fmt: skip
        theirs = timed([str(BIN / "auditwheel"), "show", str(wheel)])
        floor, elf_bytes = floor_seconds(wheel)
        inflated, _ = inflated_bytes(wheel)
        best = min(ours)
        entry = {
            "wheel": wheel.name,
            "size_bytes": wheel.stat().st_size,
            "elf_bytes": elf_bytes,
            "relforge_inflated_bytes": inflated,
            "relforge_inflated_fraction": round(inflated / elf_bytes, 3) if elf_bytes else None,
            "relforge_seconds": {"best": best, "median": statistics.median(ours), "runs": ours},
            "auditwheel_show_seconds": theirs,
            "inflate_all_elf_seconds": floor,
            "speedup_vs_auditwheel": round(theirs / best, 1),
        }
        if wheel.name.startswith("torch-"):
            entry["goal_speedup"] = GOAL
            entry["meets_goal"] = theirs / best >= GOAL
        results.append(entry)
        print(json.dumps(entry, indent=2), flush=True)
    out = {
        "benchmark": "relforge wheel inspect vs auditwheel show (fresh processes, one run)",
        "results": results,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "load_average": os.getloadavg(),
        "note": "the machine was shared with other jobs; rerun on a quiet machine for figures",
    }
    path = ROOT / "benchmarks" / "results" / "wheel_inspect.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
