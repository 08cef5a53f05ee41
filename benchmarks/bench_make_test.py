"""`make test` on clean clones of two commits, one after the other on the same machine: the
suite's wall and CPU time as CI sees it (the venv created and installed, ruff, mypy with the
cache the Makefile keeps outside the checkout, pytest on 4 workers), before and after a change.
Run by hand, on a machine with nothing else running (the suite is CPU-bound: wall seconds only
compare at equal load):

    .venv/bin/python benchmarks/bench_make_test.py BEFORE_REV AFTER_REV

Each clone goes to a fresh temporary folder; its JUnit report gives the tests, failures and the
slowest files.  The figures replace the `clean_clone_make_test` entry of
benchmarks/results/test_suite.json (--out: another file).  CPU seconds are those of `make` and
every child it waited for (what runs inside Docker containers is not in them); the machine's
busy CPU seconds (/proc/stat, every process: containers, dockerd's pushes) are beside them, and
on an otherwise idle machine they are what the wall clock follows (2 cores: wall ≈ busy / 2).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "test_suite.json"


def _machine_busy() -> float:
    """Seconds the machine's cores were busy since boot (user, nice, system, irq, softirq,
    steal), from the first line of /proc/stat."""
    fields = Path("/proc/stat").read_text(encoding="ascii").splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def _report(junit: Path, top: int = 12) -> dict[str, Any]:
    if not junit.is_file():
        return {"tests": 0, "note": "no JUnit report: pytest did not run"}
    root = ET.parse(junit).getroot()
    files: dict[str, float] = {}
    tests = failed = 0
    for case in root.iter("testcase"):
        tests += 1
        failed += any(child.tag in ("failure", "error") for child in case)
        parts = case.get("classname", "").split(".")
        name = next((p for p in reversed(parts) if p.startswith("test_")), parts[-1]) + ".py"
        files[name] = files.get(name, 0.0) + float(case.get("time", 0))
    slowest = sorted(files.items(), key=lambda kv: -kv[1])[:top]
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    pytest_wall = float(suite.get("time", 0)) if suite is not None else 0.0
    return {
        "pytest_wall_s": round(pytest_wall, 1),  # the rest of make's wall: venv, ruff, mypy
        "tests": tests,
        "failed": failed,
        "slowest_files_s": [[name, round(s, 1)] for name, s in slowest],
    }


def measure(rev: str) -> dict[str, Any]:
    """Clone `rev` of this repository and run `make test` there."""
    with tempfile.TemporaryDirectory(prefix="relforge-make-test-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", rev], check=True)
        commit = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        junit = Path(tmp) / "junit.xml"
        env = {**os.environ, "PYTEST_ADDOPTS": f"--junitxml={junit} -p no:cacheprovider"}
        load = os.getloadavg()[0]
        user, system = _children()
        busy = _machine_busy()
        start = time.perf_counter()
        done = subprocess.run(
            ["make", "test"], cwd=clone, env=env, stdout=subprocess.DEVNULL, check=False
        )
        wall = time.perf_counter() - start
        busy = _machine_busy() - busy
        user2, system2 = _children()
        return {
            "commit": commit,
            "exit": done.returncode,
            "make_test_wall_s": round(wall, 1),
            "user_s": round(user2 - user, 1),
            "sys_s": round(system2 - system, 1),
            "machine_busy_cpu_s": round(busy, 1),
            "load_average_before": round(load, 2),
            "load_average_after": round(os.getloadavg()[0], 2),
            **_report(junit),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    runs = {"before": measure(args.before), "after": measure(args.after)}
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["clean_clone_make_test"] = {
        "how": "benchmarks/bench_make_test.py: a clean clone of each commit, `make test` "
        "(venv install, ruff, mypy, pytest -n 4), one after the other",
        "machine": f"{os.cpu_count()} cores",
        **runs,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(runs, indent=2))
    return max(int(r["exit"]) for r in runs.values())


if __name__ == "__main__":
    raise SystemExit(main())
