"""Benchmark: `relforge wheel strip-local` on a real torch wheel vs `wheel unpack` + `wheel pack`.

Goal (issue 8): at least 40x faster than unpack + pack (about 21 s on the reference machine).
relforge copies the members' compressed bytes; wheel unpack + pack decompresses and recompresses
everything.  Both are run as commands in fresh processes, as a release engineer would.
Writes benchmarks/results/strip_local.json.
"""

from __future__ import annotations

import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WHEELS = sorted(Path("/opt/wheels").glob("torch-2.13.0+cpu-*.whl"))
GOAL = 40.0
RUNS = 5


def relforge_strip(wheel: Path, out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "relforge"), "wheel", "strip-local", str(wheel), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def unpack_pack(wheel: Path, work: Path) -> float:
    """The same edit with the wheel tool: unpack, fix METADATA and the folder name, pack."""
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "wheel"), "unpack", str(wheel), "-d", str(work)], check=True, capture_output=True
    )
    (tree,) = work.iterdir()
    (info,) = tree.glob("*.dist-info")
    version = info.name.removesuffix(".dist-info").split("-", 1)[1]
    public = version.split("+")[0]
    meta = info / "METADATA"
    meta.write_text(meta.read_text().replace(f"Version: {version}\n", f"Version: {public}\n", 1))
    info.rename(info.with_name(info.name.replace(version, public)))
    (work / "out").mkdir()
    subprocess.run(
        [str(BIN / "wheel"), "pack", str(tree), "-d", str(work / "out")],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def same_content(a: Path, b: Path) -> bool:
    """Both outputs hold the same members with the same uncompressed content (CRC), METADATA
    and RECORD aside (relforge also drops classifiers PyPI rejects)."""
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        crcs_a = {
            i.filename: i.CRC
            for i in za.infolist()
            if not i.filename.endswith(("METADATA", "RECORD"))
        }
        crcs_b = {
            i.filename: i.CRC
            for i in zb.infolist()
            if not i.filename.endswith(("METADATA", "RECORD"))
        }
    return crcs_a == crcs_b


def main() -> None:
    if not WHEELS:
        print("no /opt/wheels/torch-2.13.0+cpu-*.whl on this machine; nothing to measure")
        return
    wheel = WHEELS[0]
    with tempfile.TemporaryDirectory(prefix="bench-strip-") as tmp:
        out, work = Path(tmp) / "relforge", Path(tmp) / "wheeltool"
        relforge = [relforge_strip(wheel, out) for _ in range(RUNS)]
        baseline = unpack_pack(wheel, work)
        (ours,) = out.glob("*.whl")
        (theirs,) = (work / "out").glob("*.whl")
        equal = same_content(ours, theirs)
        result = {
            "benchmark": "relforge wheel strip-local vs wheel unpack + wheel pack",
            "wheel": wheel.name,
            "wheel_bytes": wheel.stat().st_size,
            "relforge_seconds": {
                "best": min(relforge),
                "median": statistics.median(relforge),
                "runs": RUNS,
            },
            "unpack_pack_seconds": baseline,
            "speedup_vs_median": baseline / statistics.median(relforge),
            "goal_speedup": GOAL,
            "meets_goal": baseline / statistics.median(relforge) >= GOAL,
            "outputs_have_the_same_members": equal,
            "output_bytes": {"relforge": ours.stat().st_size, "wheel_pack": theirs.stat().st_size},
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, shared 2-core (noisy)",
        }
    path = ROOT / "benchmarks" / "results" / "strip_local.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
