"""How long `make test` takes, phase by phase (ruff, ruff format, mypy, pytest), with pytest's
slowest tests and modules, for the serial run (`pytest`), the parallel one `make test` makes
(`make`: 4 workers, files longest first, temporary files in /dev/shm when it has 8 GiB free) and
that one with temporary files on disk (`make-disk`).  Run by hand, one mode at a time (each is a
full suite run):

    .venv/bin/python benchmarks/bench_test_suite.py --mode serial
    .venv/bin/python benchmarks/bench_test_suite.py --mode make
    .venv/bin/python benchmarks/bench_test_suite.py --mode make-disk

Each run replaces its own entry in benchmarks/results/test_suite.json (--out: another file; test
paths after the options: only those, to try the script itself).  CPU seconds are those of
the processes and the children they waited for (pytest workers, pip, linters, moto); what runs
inside Docker containers is not in them.  On a shared machine the wall clock grows with the
load average recorded beside it: compare CPU seconds across runs, wall seconds only at equal load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RESULT = ROOT / "benchmarks" / "results" / "test_suite.json"
MAKE = ["-n", "4", "--dist", "loadfile", "--no-loadscope-reorder"]  # as the Makefile's test
PYTEST = {"serial": [], "make": MAKE, "make-disk": MAKE}


def _tmpdir(mode: str) -> str | None:
    """The TMPDIR `make test` picks (the Makefile decides: `make test-tmpdir` prints it)."""
    if mode != "make":
        return None
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "test-tmpdir"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    tmpdir = done.stdout.strip()
    if tmpdir:
        Path(tmpdir).mkdir(parents=True, exist_ok=True)
    return tmpdir or None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], **kw: Any) -> dict[str, float]:
    """Wall and CPU seconds of one command (and every child it waited for)."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, check=False, **kw)
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(_children_cpu() - cpu, 1),
        "exit": done.returncode,
    }


def slowest(junit: Path, top: int = 15) -> dict[str, Any]:
    """The slowest tests and modules of a JUnit XML report (wall seconds, as pytest saw them)."""
    cases = [
        (float(c.get("time", 0)), f"{c.get('classname')}::{c.get('name')}")
        for c in ET.parse(junit).getroot().iter("testcase")
    ]
    modules: dict[str, float] = {}
    for seconds, name in cases:
        module = ".".join(name.split("::")[0].split(".")[:3])
        modules[module] = modules.get(module, 0.0) + seconds
    total = sum(s for s, _ in cases)
    return {
        "tests": len(cases),
        "sum_of_test_seconds": round(total, 1),
        "slowest_tests": [[n, round(s, 1)] for s, n in sorted(cases, reverse=True)[:top]],
        "slowest_modules": [
            [m, round(s, 1), f"{100 * s / total:.1f}%"]
            for m, s in sorted(modules.items(), key=lambda kv: -kv[1])[:top]
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(PYTEST), required=True)
    parser.add_argument("--out", type=Path, default=RESULT, help="the JSON file to update")
    parser.add_argument("tests", nargs="*", help="test paths (default: the whole suite)")
    args = parser.parse_args()
    for cache in (".ruff_cache", ".mypy_cache"):  # as on a fresh CI checkout
        shutil.rmtree(ROOT / cache, ignore_errors=True)
    paths = ["src", "tests", "benchmarks", "scripts"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    load = os.getloadavg()[0]
    phases = {
        "ruff_check": timed([str(BIN / "ruff"), "check", *paths], **quiet),
        "ruff_format": timed([str(BIN / "ruff"), "format", "--check", *paths], **quiet),
        "mypy_cold": timed([str(BIN / "mypy")], **quiet),
    }
    junit = ROOT / ".relforge" / f"test-suite-{args.mode}.xml"
    junit.parent.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "pytest", "-q", *PYTEST[args.mode], f"--junitxml={junit}"]
    argv += args.tests
    tmpdir = _tmpdir(args.mode)
    env = {**os.environ, **({"TMPDIR": tmpdir} if tmpdir else {})}
    phases["pytest"] = timed(argv, stdout=subprocess.DEVNULL, env=env)
    entry = {
        "command": " ".join(["pytest", *PYTEST[args.mode], *args.tests]),
        "tmpdir": tmpdir or os.environ.get("TMPDIR", "/tmp"),
        "phases": phases,
        "total_wall_s": round(sum(p["wall_s"] for p in phases.values()), 1),
        "total_cpu_s": round(sum(p["cpu_s"] for p in phases.values()), 1),
        "load_average_before": round(load, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        **slowest(junit),
    }
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.setdefault("runs", {})[args.mode] = entry
    results["python"] = platform.python_version()
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(entry["phases"], indent=2))
    return int(max(p["exit"] for p in phases.values()))


if __name__ == "__main__":
    raise SystemExit(main())
