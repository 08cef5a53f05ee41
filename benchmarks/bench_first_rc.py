"""Benchmark: from `relforge init` to an installed first release candidate, for copies of the
kinds of public native projects in tests/realprojects.py (a torch C++ extension,
scikit-build-core + pybind11, setuptools + pybind11, a numpy C extension versioned by
setuptools-scm, a Cython module, a Limited-API C extension), on the host builder, with no
matrix edit: the goal of issue 35 is at most 15 minutes of wall time per project on a 2-core
machine, torch extensions included.

For each kind: a fresh copy made a git repository with a bare `origin` holding `main`, then
exactly what `relforge init` prints next (README.md's Getting started): lint --strict, build
every cell of the release (nightly), validate --runtime, publish; commit and push the files
init wrote; release cut and release tag --rc; check out the release branch; build, validate
--runtime and publish the RC on the test channel; pip install the project from the test
channel's CPU index into a fresh venv (its dependencies from the machine's usual indexes, as a
user's pip would) and call the extension.  The wall time of each step and the total are
recorded, with the number of cells each build built and the edits made (none).  Caches
(relforge's wheelhouse, the axis wheels, pip's own) are warm after the first kind that needs
them, as for a user's second project.

Writes benchmarks/results/first_rc.json.  `--kind NAME` (repeatable) limits the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.*: the project copies

from tests.realprojects import KINDS, Kind, write_project  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "first_rc.json"
GOAL_SECONDS = 15 * 60


class Shell:
    """Commands run as a user's shell runs them, in the project's folder, timed."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env = {**os.environ, "PATH": path}
        self.env.pop("VIRTUAL_ENV", None)
        self.seconds: dict[str, float] = {}

    def __call__(self, step: str, command: str) -> str:
        began = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", f"set -eo pipefail\n{command}"],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        self.seconds[step] = round(self.seconds.get(step, 0.0) + time.monotonic() - began, 1)
        if done.returncode != 0:
            raise SystemExit(f"{step}: `{command}` exited {done.returncode}\n{done.stderr[-4000:]}")
        return done.stdout + done.stderr


def repository(root: Path) -> None:
    origin = root.parent / f"{root.name}.git"
    for argv, cwd in (
        (["git", "init", "-q", "--bare", "-b", "main", str(origin)], root.parent),
        (["git", "init", "-q", "-b", "main"], root),
        (["git", "add", "-A"], root),
        (["git", "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", "start"], root),
        (["git", "remote", "add", "origin", str(origin)], root),
        (["git", "push", "-q", "-u", "origin", "main"], root),
    ):
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)


def built_cells(output: str) -> int:
    return sum(1 for line in output.splitlines() if "] built " in line)


def one(kind: Kind) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="relforge-bench-rc-") as scratch:
        root = write_project(kind, Path(scratch))
        repository(root)
        sh = Shell(root)
        start = time.monotonic()
        said = sh("init", "relforge init")
        printed = [c.strip() for c in said.split("next:\n", 1)[1].splitlines() if c.strip()]
        lint, build, validate, publish, cut, tag = printed
        sh("lint", lint)
        cells = built_cells(sh("build nightly", build))
        sh("validate nightly", validate)
        sh("publish nightly", publish)
        commit = 'git -c user.name=b -c user.email=b@e commit -qm "relforge"'
        sh("commit and push", f"git add -A && {commit} && git push -q origin main")
        sh("release cut", cut)
        sh("release tag", tag)
        release = shlex.split(cut)[3]
        sh("checkout", f"git fetch -q origin --tags && git checkout -q release/{release}")
        rc_cells = built_cells(sh("build rc", build))
        sh("validate rc", validate)
        sh("publish rc", publish)
        index = (root / ".relforge" / "store" / "whl" / "test" / "cpu").as_uri() + "/"
        venv = root.parent / "try"
        sh(
            "install",
            f"{shlex.quote(sys.executable)} -m venv {venv} && {venv}/bin/pip install -q "
            f"--index-url {index} {kind.name}",
        )
        probe = subprocess.run(
            [str(venv / "bin" / "python"), "-c", kind.probe],
            cwd=root.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        total = round(time.monotonic() - start, 1)
        return {
            "kind": kind.name,
            "edits": [],  # what `relforge init` wrote was built as it was
            "cells_nightly": cells,
            "cells_rc": rc_cells,
            "seconds": {**sh.seconds, "total": total},
            "within_goal": total <= GOAL_SECONDS,
            "probe": probe,
            "probe_ok": probe.splitlines()[-1] == kind.expected,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", action="append", choices=sorted(KINDS))
    chosen = parser.parse_args().kind or list(KINDS)
    load = os.getloadavg()[0]
    runs = [one(KINDS[name]) for name in chosen]
    result = {
        "benchmark": "bench_first_rc",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, load {load:.1f} at start",
        "python": platform.python_version(),
        "goal_seconds": GOAL_SECONDS,
        "runs": runs,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for run in runs:
        steps = ", ".join(f"{k} {v}" for k, v in run["seconds"].items() if k != "total")
        print(
            f"{run['kind']:>14}: {run['seconds']['total']:6.1f} s, {run['cells_rc']} RC cells, "
            f"edits {len(run['edits'])}, probe {'ok' if run['probe_ok'] else 'WRONG'} ({steps})"
        )
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
