"""Benchmark: `relforge wheel inspect` of a large macOS wheel against one test read of its zip.

Goal (issue 34): `wheel inspect` of torch-2.9.0-cp312-none-macosx_11_0_arm64.whl (74 MB,
hundreds of Mach-O files) with the Mach-O checks takes at most 1.5x the time of
`python -m zipfile -t` on the same file (which inflates and CRC-checks every member), ratio
measured in one run: fresh processes, alternated, RUNS each.  The wheel is fetched once from
PyPI (pinned by version and sha256) into ~/.cache/relforge/bench-wheels.  Also records what
the inspection found (Mach-O files, their architectures and minimum macOS, failed checks).
Writes benchmarks/results/macos_inspect.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("RELFORGE_BENCH_CACHE", Path.home() / ".cache/relforge/bench-wheels"))
WHEEL = "torch-2.9.0-cp312-none-macosx_11_0_arm64.whl"
PIN = ("torch==2.9.0", "macosx_11_0_arm64", "3.12")
SHA256 = "33f58e9a102a91259af289d50525c30323b5c9ae1d31322b6447c0814da68695"  # PyPI
RUNS = int(os.environ.get("RELFORGE_BENCH_RUNS", "3"))
GOAL = 1.5
BIN = Path(sys.executable).parent


def fetch() -> Path:
    target = CACHE / WHEEL
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--isolated",
                    "--index-url",
                    "https://pypi.org/simple",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--platform",
                    PIN[1],
                    "--python-version",
                    PIN[2],
                    "-d",
                    tmp,
                    PIN[0],
                ],
                check=True,
            )
            (Path(tmp) / WHEEL).replace(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if SHA256 and digest != SHA256:
        sys.exit(f"{target}: sha256 {digest}, pinned {SHA256}")
    return target


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    wheel = fetch()
    zip_test = [sys.executable, "-m", "zipfile", "-t", str(wheel)]
    inspect = [str(BIN / "relforge"), "wheel", "inspect", str(wheel), "--format", "json"]
    timed(zip_test)  # warm the page cache
    times: dict[str, list[float]] = {"zipfile_t": [], "inspect": []}
    report: dict[str, Any] = {}
    for _ in range(RUNS):
        times["zipfile_t"].append(timed(zip_test)[0])
        seconds, out = timed(inspect)
        times["inspect"].append(seconds)
        report = json.loads(out)
    machos = report.get("macho_files", [])
    ratio = statistics.median(times["inspect"]) / statistics.median(times["zipfile_t"])
    result: dict[str, Any] = {
        "benchmark": "relforge wheel inspect (Mach-O checks) vs python -m zipfile -t, fresh "
        "processes, alternated, one run",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "wheel": wheel.name,
        "size_bytes": wheel.stat().st_size,
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "runs": RUNS,
        "seconds": {
            k: {"best": min(v), "median": statistics.median(v), "runs": v} for k, v in times.items()
        },
        "ratio_median": round(ratio, 3),
        "goal_ratio": GOAL,
        "macho_files": len(machos),
        "arches": sorted({s["arch"] for m in machos for s in m.get("slices", [])}),
        "minimum_macos": sorted(
            {s["minos"] for m in machos for s in m.get("slices", []) if s["minos"]}
        ),
        "unreadable": [m["path"] for m in machos if m.get("error")],
        "failed_checks": [
            f"{v['check']}: {v['message'][:300]}"
            for v in report.get("verdicts", [])
            if v["status"] == "fail"
        ],
    }
    result["meets_goal"] = ratio <= GOAL
    target = ROOT / "benchmarks" / "results" / "macos_inspect.json"
    target.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
