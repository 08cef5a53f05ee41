"""Benchmark: validating a native archive against validating the wheel it was made from.

The archive is torch-2.13.0+cpu's wheel (190 MB, /opt/wheels) laid out like libtorch —
torch/lib, torch/include and torch/share moved under libtorch/, the Python part under
libtorch/python/, a libtorch/build-version added — with every member's compressed bytes copied
as they are (relforge.promote.zipcopy), so both files hold the same bytes to inflate.  In one
run, alternating, best of RELFORGE_BENCH_RUNS (default 3):
  - archive: every static check of the libtorch cell (RF-V060–V064 with the CRC-32 of every
    member, and the member/ELF checks of the wheel);
  - wheel: every static check of the wheel cell (RECORD hashes of every member, ELF checks).
Writes benchmarks/results/archive_validate.json.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from relforge.manifest import Verdict
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.validate.archive import archive_platform_tags
from relforge.validate.archivechecks import validate_archive
from relforge.validate.checklist import Expectation, check_artifact
from relforge.validate.facts import gather
from relforge.zipcopy import rewrite_zip

ROOT = Path(__file__).resolve().parent.parent
WHEEL = Path(
    os.environ.get(
        "RELFORGE_BENCH_TORCH", "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    )
)
RUNS = int(os.environ.get("RELFORGE_BENCH_RUNS", "3"))
MATRIX = """\
schema_version: 1
project: {name: torch, size_limit_mb: 1000}
releases:
  "2.13":
    python: ["3.11"]
    platforms:
      linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
    accelerators:
      cpu: {kind: cpu, platforms: {linux-x86_64: {}}}
    libtorch: {platforms: [linux-x86_64], accelerators: [cpu], variants: [shared-with-deps]}
"""


def as_libtorch(name: str) -> str:
    for part in ("lib", "include", "share"):
        if name.startswith(f"torch/{part}/"):
            return "libtorch/" + name[len("torch/") :]
    return "libtorch/python/" + name


def timed(fn: Callable[[], list[Verdict]]) -> tuple[float, list[Verdict]]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="relforge-bench-archive-"))
    matrix_path = tmp / "matrix.yaml"
    matrix_path.write_text(MATRIX)
    matrix = load_matrix(str(matrix_path))
    release = matrix.release("2.13")
    cells = {c.package_type: c for c in expand_cells(matrix, "2.13", channel="test")}
    archive = tmp / "torch-linux-x86_64-shared-with-deps-release-2.13.0+cpu.zip"
    with zipfile.ZipFile(WHEEL) as zf:
        last = max(zf.infolist(), key=lambda i: i.header_offset).filename
    start = time.perf_counter()
    rewrite_zip(
        WHEEL,
        archive,
        rename=as_libtorch,
        replace={},
        add={"libtorch/build-version": b"2.13.0+cpu\n"},
        add_before=last,
    )
    made = time.perf_counter() - start
    timings: dict[str, list[float]] = {"archive": [], "wheel": []}
    verdicts: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(RUNS):
            seconds, out = timed(
                lambda: validate_archive(
                    archive,
                    Expectation(cell=cells["archive"], project="torch", size_limit=10**9),
                    archive_platform_tags(release, cells["archive"]),
                    pool,
                )
            )
            timings["archive"].append(seconds)
            verdicts["archive"] = {v.check: v.status for v in out}
            seconds, out = timed(
                lambda: check_artifact(
                    gather(WHEEL, pool, verify_digests=True, symbols=True),
                    Expectation(cell=cells["wheel"], project="torch", size_limit=10**9),
                )
            )
            timings["wheel"].append(seconds)
            verdicts["wheel"] = {v.check: v.status for v in out}
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "input": {"wheel": WHEEL.name, "bytes": WHEEL.stat().st_size},
        "archive_made_seconds": round(made, 2),
        "archive_seconds": {"best": round(min(timings["archive"]), 2), "all": timings["archive"]},
        "wheel_seconds": {"best": round(min(timings["wheel"]), 2), "all": timings["wheel"]},
        "ratio_archive_to_wheel": round(min(timings["archive"]) / min(timings["wheel"]), 2),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "verdicts": verdicts,
    }
    out_path = ROOT / "benchmarks" / "results" / "archive_validate.json"
    out_path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "verdicts"}, indent=2))
    archive.unlink()


if __name__ == "__main__":
    main()
