"""Benchmark: the 8 cells of matrix/example.yaml built in Docker against the same build on the
host, in one run.

Goals (issue 15):
  - cold: `relforge build --builder docker --jobs 2` takes at most 1.3× the same build with
    `--builder host` (both with an empty build cache, one right after the other);
  - warm: a Docker rebuild with nothing changed takes at most 5 % of the cold Docker build.
The builder image (host CPython 3.10–3.13 + CUDA 13.0, `relforge builder-image`) is made first
and not timed with the builds (its own time is reported; it is cached by content).  The engine is
DOCKER_HOST when set, else a private dockerd started here.  The host build runs first, so pip's
wheelhouse and relforge's build layers are warm for it — the comparison favours the host.
Writes benchmarks/results/build_docker.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.integration.dockerd: the private engine of the tests

MATRIX = ROOT / "matrix" / "example.yaml"
RESULT = ROOT / "benchmarks" / "results" / "build_docker.json"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
CUDA = Path("/usr/local/cuda-13.0")
GOAL_RATIO = 1.3
GOAL_WARM_RATIO = 0.05
JOBS = 2


def engine() -> contextlib.AbstractContextManager[str]:
    """DOCKER_HOST's engine when set, else a private dockerd started here."""
    from tests.integration.dockerd import given_or_private_dockerd

    return given_or_private_dockerd(prefix="relforge-bench-dockerd-")


def relforge(workdir: Path, builder: str, env: dict[str, str]) -> tuple[float, dict[str, object]]:
    argv = [str(Path(sys.executable).parent / "relforge"), "build", str(MATRIX), "-r", "1.0"]
    argv += ["--builder", builder, "--jobs", str(JOBS), "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"relforge build --builder {builder} failed ({done.returncode}):\n{done.stderr}")
    data: dict[str, object] = json.loads(done.stdout)
    return elapsed, data


def statuses(run: dict[str, object]) -> dict[str, list[str]]:
    """Which cells the run built (the example's 8 wheels and its native archive), how, where."""
    cells = run["cells"]
    assert isinstance(cells, list)
    return {
        "cells": sorted(str(c["cell"]) for c in cells),
        "status": sorted({str(c["status"]) for c in cells}),
        "builder": sorted({str(c["builder"]) for c in cells}),
    }


def main() -> None:
    from relforge.builders.images.baseimage import ImageSpec
    from relforge.builders.images.pyimage import PythonImageSpec, base_spec, make_python_image

    work = Path(tempfile.mkdtemp(prefix="relforge-bench-docker-"))
    try:
        with engine() as host:
            env = {**os.environ, "DOCKER_HOST": host}
            os.environ["DOCKER_HOST"] = host
            name = "relforge/builder:bookworm"
            start = time.perf_counter()
            image = make_python_image(
                PythonImageSpec(
                    name=name, base=base_spec(ImageSpec(), name), pythons=PYTHONS, cuda=(CUDA,)
                ),
                say=lambda text: print(text, file=sys.stderr),
            )
            image_s = time.perf_counter() - start
            runs: dict[str, tuple[float, dict[str, object], float]] = {}
            for label, builder, folder in (
                ("host_cold", "host", "host"),
                ("docker_cold", "docker", "docker"),
                ("docker_warm", "docker", "docker"),
                ("host_warm", "host", "host"),
            ):
                (work / folder).mkdir(exist_ok=True)
                load = os.getloadavg()[0]
                seconds, data = relforge(work / folder, builder, env)
                runs[label] = (seconds, data, load)
                print(f"{label}: {seconds:.1f} s (load {load:.1f})", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    host_s, docker_s = runs["host_cold"][0], runs["docker_cold"][0]
    warm_s = runs["docker_warm"][0]
    ratio = docker_s / host_s
    warm_ratio = warm_s / docker_s
    result = {
        "benchmark": "the 8 cells of matrix/example.yaml: Docker vs host, --jobs 2, same run",
        "image": {
            "name": image.name,
            "made_now": image.made,
            "seconds": round(image_s, 1),
            "pythons": [p.label for p in image.pythons],
            "cuda": [t.version for t in image.cuda],
        },
        "host_cold_seconds": round(host_s, 2),
        "docker_cold_seconds": round(docker_s, 2),
        "docker_vs_host": round(ratio, 3),
        "goal_docker_vs_host": GOAL_RATIO,
        "docker_warm_seconds": round(warm_s, 3),
        "docker_warm_ratio": round(warm_ratio, 4),
        "goal_warm_ratio": GOAL_WARM_RATIO,
        "host_warm_seconds": round(runs["host_warm"][0], 3),
        "runs": {label: statuses(data) for label, (_, data, _) in runs.items()},
        "load_average_before": {label: round(load, 2) for label, (_, _, load) in runs.items()},
        "meets_goals": ratio <= GOAL_RATIO and warm_ratio <= GOAL_WARM_RATIO,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "niceness": os.nice(0),  # inherited by the host build; start dockerd at the same one
        "note": "the machine is shared by other jobs: compare the load averages before each run"
        + (
            f"; {os.environ['RELFORGE_BENCH_NOTE']}"
            if os.environ.get("RELFORGE_BENCH_NOTE")
            else ""
        ),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
