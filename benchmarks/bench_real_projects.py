"""Benchmark: from `relforge init` to an installed wheel, for copies of four kinds of public
native projects (tests/realprojects.py: a torch C++ extension, scikit-build-core + pybind11,
setuptools + pybind11, a numpy C extension), on the host builder and in Docker.

For each kind and builder: a fresh copy, `relforge init`, the matrix edits the README documents
for that kind (tests/realprojects.adopt), build, validate statically and at runtime, publish to
the nightly channel of the local store, pip install from its index and call the extension
(tests/adoption.init_to_installed, which the integration tests assert on).  The time of each
step (wall clock) and the total are recorded with the edits that were needed, and the CPU
seconds of the processes run here (on a shared machine, wall time follows the load).  Caches
(relforge's wheelhouse, the axis wheels, pip's own) are warm after the first kind that needs
them, as for a user's second project; the first run of a kind that fetches something is
reported as it came.

The Docker builds use `relforge/builder:bookworm` (`relforge builder-image --python 3.11`, made
first and not timed); the engine is DOCKER_HOST when set, else a private dockerd started here.
`--builder host` or `--builder docker` limits the run to one.
Writes benchmarks/results/real_projects.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.*: the project copies, the walk, the private engine

from tests.adoption import init_to_installed  # noqa: E402
from tests.realprojects import KINDS, Kind, write_project  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "real_projects.json"
RELFORGE = str(Path(sys.executable).parent / "relforge")
IMAGE = "relforge/builder:bookworm"


def engine() -> contextlib.AbstractContextManager[str]:
    """DOCKER_HOST's engine when set, else a private dockerd started here."""
    from tests.integration.dockerd import given_or_private_dockerd

    return given_or_private_dockerd(prefix="relforge-bench-dockerd-")


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


class Cli:
    """`relforge ARGS…` as a subprocess in the project's folder, like a user's shell."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, env

    def __call__(self, *args: str) -> Done:
        done = subprocess.run(
            [RELFORGE, *args], cwd=self.cwd, env=self.env, capture_output=True, text=True
        )
        return Done(done.returncode, done.stdout, done.stderr)


def edits(kind: Kind, builder: str) -> list[str]:
    """The matrix edits the README documents that this kind needed."""
    found: list[str] = []  # init writes the platform tag, requires_python, axes, version.txt
    if builder == "docker":
        found.append(f"image: {IMAGE} (relforge builder-image; no registry here)")
    return found


def one(kind: Kind, builder: str, env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="relforge-bench-real-") as scratch:
        root = write_project(kind, Path(scratch))
        image = IMAGE if builder == "docker" else None
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = init_to_installed(kind, root, Cli(root, env), builder=builder, image=image)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return {
            "kind": kind.name,
            "builder": builder,
            "seconds": done.seconds,
            # relforge, pip and the compilers it ran; not a container's (dockerd runs those)
            "cpu_seconds_here": round(cpu, 1),
            "edits": edits(kind, builder),
            "wheel": Path(done.cell["file"]).name,
            "version_attribute": done.verdicts.get("RF-R005"),
            "installed": done.installed,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builder", choices=("host", "docker"), action="append")
    builders = parser.parse_args().builder or ["host", "docker"]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    runs: list[dict[str, Any]] = []
    load = os.getloadavg()[0]
    if "host" in builders:
        runs += [one(kind, "host", env) for kind in KINDS.values()]
    if "docker" in builders:
        with engine() as host:
            env = {**env, "DOCKER_HOST": host}
            started = time.perf_counter()
            subprocess.run([RELFORGE, "builder-image", "--python", "3.11"], env=env, check=True)
            image_seconds = round(time.perf_counter() - started, 1)
            runs += [one(kind, "docker", env) for kind in KINDS.values()]
    result = {
        "benchmark": "bench_real_projects",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, load {load:.1f} at start",
        "python": platform.python_version(),
        "runs": runs,
        **({"builder_image_seconds": image_seconds} if "docker" in builders else {}),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for run in runs:
        steps = ", ".join(f"{k} {v}" for k, v in run["seconds"].items() if k != "total")
        print(f"{run['kind']:>14} {run['builder']:>6}: {run['seconds']['total']:6.1f} s ({steps})")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
