"""Benchmark: `relforge wheel inspect` against `auditwheel show`, side by side, on real wheels.

Goal (issue 6): at least 20x faster than auditwheel on torch-2.14.1 (CUDA, 555 MB, 1 GB of ELF).
For each wheel found in /opt/pypi-more/files/ this measures, in one run:
  - relforge: a fresh `relforge wheel inspect WHEEL --format json` process (best and median,
    peak RSS of the best);
  - auditwheel: a fresh `auditwheel show WHEEL` process;
  - floor: inflating every ELF member completely (what a reader that must see all bytes pays);
  - how many ELF bytes relforge inflated (in-process run).
Goal (issue 13): the ABI contract check against a provider wheel adds at most 50%: torch with
`--with` the nvidia wheels it declares (each alone, then all) against torch alone, and
torchvision with `--with torch` against torchvision and torch inspected one after the other
(the RF-V046 verdicts are recorded: a torchvision built for another torch shows its missing
symbols).  Writes benchmarks/results/wheel_inspect.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILES = Path(os.environ.get("RELFORGE_BENCH_WHEELS", "/opt/pypi-more/files"))
WHEELS = ("torch-2.14.1-*.whl", "nvidia_cudnn_cu13-*.whl", "nvidia_cublas-*.whl")
PROVIDERS = ("nvidia_cudnn_cu13-*.whl", "nvidia_cublas-*.whl", "nvidia_cuda_cupti-*.whl")
GOAL = 20.0
RUNS = int(os.environ.get("RELFORGE_BENCH_RUNS", "3"))
BIN = Path(sys.executable).parent


LAST: dict[str, Any] = {}


def timed(argv: list[str]) -> float:
    """Wall seconds of a fresh process; its stdout and peak RSS (wait4) land in LAST."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    chunks: list[str] = []
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None  # both are PIPEs
    reader = threading.Thread(target=lambda: chunks.append(stdout.read()), daemon=True)
    reader.start()
    peak = [0]
    done = threading.Event()

    def sample() -> None:  # VmHWM: peak RSS since exec (wait4 also counts the parent's pages)
        while not done.is_set():
            try:
                text = Path(f"/proc/{proc.pid}/status").read_text()
                peak[0] = max(peak[0], int(text.split("VmHWM:")[1].split()[0]))
            except (OSError, IndexError, ValueError):
                pass
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    done.set()
    reader.join()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in (0, 4):
        raise SystemExit(f"{argv[0]} failed ({code}): {err[-2000:]}")
    LAST.update(
        stdout="".join(chunks),
        max_rss_mib=peak[0] / 1024,
        cpu=usage.ru_utime + usage.ru_stime,  # steadier than wall time on a loaded machine
    )
    return elapsed


def inspect_argv(wheel: Path, *deps: Path) -> list[str]:
    extra = [a for d in deps for a in ("--with", str(d))]
    return [str(BIN / "relforge"), "wheel", "inspect", str(wheel), *extra, "--format", "json"]


def interleaved(*argvs: list[str]) -> list[dict[str, Any]]:
    """Each command RUNS times, taking turns (so load changes hit all alike): best wall and CPU
    seconds of each, and the last report."""
    walls: list[list[float]] = [[] for _ in argvs]
    cpus: list[list[float]] = [[] for _ in argvs]
    reports: list[dict[str, Any]] = [{} for _ in argvs]
    for _ in range(RUNS):
        for i, argv in enumerate(argvs):
            walls[i].append(timed(argv))
            cpus[i].append(LAST["cpu"])
            try:
                reports[i] = json.loads(LAST["stdout"])
            except json.JSONDecodeError:
                reports[i] = {}
    return [
        {"wall": min(w), "cpu": min(c), "report": r}
        for w, c, r in zip(walls, cpus, reports, strict=True)
    ]


def abi_verdict(report: dict[str, Any]) -> str:
    return next(
        (f"{v['status']}: {v['message'][:600]}" for v in report.get("verdicts", [])
         if v["check"] == "RF-V046"),
        "none",
    )  # fmt: skip


def _added(entry: dict[str, Any], base: dict[str, float], with_: dict[str, Any]) -> None:
    entry["added_fraction_wall"] = round(with_["wall"] / base["wall"] - 1, 3)
    entry["added_fraction_cpu"] = round(with_["cpu"] / base["cpu"] - 1, 3)
    entry["goal_added_fraction"] = 0.5
    entry["meets_goal"] = entry["added_fraction_cpu"] <= 0.5 and entry["added_fraction_wall"] <= 0.5


def abi_contract() -> list[dict[str, Any]]:
    """Inspect with --with provider wheels against inspect alone, runs interleaved (see the
    module docstring)."""
    out: list[dict[str, Any]] = []
    torch = next(iter(sorted(FILES.glob("torch-2.14.1-*.whl"))), None)
    if torch is None:
        return out
    providers = [p for pattern in PROVIDERS for p in sorted(FILES.glob(pattern))[:1]]
    for group in [[p] for p in providers] + ([providers] if len(providers) > 1 else []):
        alone, with_them = interleaved(inspect_argv(torch), inspect_argv(torch, *group))
        entry = {
            "consumer": torch.name,
            "providers": [p.name for p in group],
            "inspect_alone": {k: alone[k] for k in ("wall", "cpu")},
            "inspect_with_providers": {k: with_them[k] for k in ("wall", "cpu")},
        }
        _added(entry, alone, with_them)
        entry["rf_v046"] = abi_verdict(with_them["report"])
        out.append(entry)
        print(json.dumps(out[-1], indent=2), flush=True)
    for vision in sorted(FILES.glob("torchvision-*.whl")):
        own, provider, both = interleaved(
            inspect_argv(vision), inspect_argv(torch), inspect_argv(vision, torch)
        )
        base = {k: own[k] + provider[k] for k in ("wall", "cpu")}
        entry = {
            "consumer": vision.name,
            "providers": [torch.name],
            "inspect_consumer_then_provider": base,
            "inspect_with_provider": {k: both[k] for k in ("wall", "cpu")},
        }
        _added(entry, base, both)
        entry["rf_v046"] = abi_verdict(both["report"])
        out.append(entry)
        print(json.dumps(out[-1], indent=2), flush=True)
    return out


def floor_seconds(wheel: Path) -> tuple[float, int]:
    """Inflate every ELF member completely, discarding the output."""
    from relforge.validate.wheelreader import WheelArchive

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
    from relforge.validate.wheelreader import WheelArchive

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
        ours, cpus, peaks = [], [], []
        for _ in range(RUNS):
            ours.append(timed(inspect_argv(wheel)))
            cpus.append(LAST["cpu"])
            peaks.append(LAST["max_rss_mib"])
        theirs = timed([str(BIN / "auditwheel"), "show", str(wheel)])
        theirs_cpu = LAST["cpu"]
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
            "relforge_peak_rss_mib": max(peaks),
            "auditwheel_show_seconds": theirs,
            "inflate_all_elf_seconds": floor,
            "speedup_vs_auditwheel": round(theirs / best, 1),
            "relforge_cpu_seconds_best": min(cpus),
            "auditwheel_cpu_seconds": theirs_cpu,
            "cpu_speedup_vs_auditwheel": round(theirs_cpu / min(cpus), 1),
        }
        if wheel.name.startswith("torch-"):
            entry["goal_speedup"] = GOAL
            entry["meets_goal"] = theirs / best >= GOAL
        results.append(entry)
        print(json.dumps(entry, indent=2), flush=True)
    contract = abi_contract()
    out = {
        "benchmark": "relforge wheel inspect vs auditwheel show (fresh processes, one run)",
        "results": results,
        "abi_contract": contract,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "load_average": os.getloadavg(),
        "note": "the machine was shared with other jobs; rerun on a quiet machine for figures. "
        "Peak RSS is the process's VmHWM (sampled every 20 ms) and includes the pages of the "
        "memory-mapped wheel that were touched",
    }
    path = ROOT / "benchmarks" / "results" / "wheel_inspect.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
