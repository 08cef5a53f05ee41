"""Benchmark: `relforge wheel inspect` against `auditwheel show` over every real Linux wheel on
this machine, sequentially, back to back, with a full ELF read as ground truth.

Goal (issue 13): total time at least 12x below auditwheel's; peak memory reported.  For each
wheel (deduplicated by file name) found in RELFORGE_CORPUS_DIRS (default /opt/pypi-more/files,
/opt/wheels, /opt/pypi/files) whose platform tag names Linux:

  - the file is read once first, so neither tool pays for a cold page cache;
  - relforge: a fresh `relforge wheel inspect WHEEL --format json` process — wall time, peak RSS
    (VmHWM) and peak anonymous RSS (RssAnon: memory minus the mapped file), sampled every 20 ms;
  - auditwheel: a fresh `auditwheel show WHEEL` process — wall time, and the symbol-version
    ceiling it prints ("This constrains the platform tag to …");
  - ground truth, untimed: every ELF member inflated whole and read with pyelftools (auditwheel's
    own ELF library, independent of relforge's reader) → the strictest policy its version needs
    fit, compared with relforge's `symbol_version_ceiling`.

Progress goes to benchmarks/results/wheel_corpus.jsonl (one line per wheel; a rerun resumes
after the wheels already there, so an interrupted run keeps its partial figures); the summary to
benchmarks/results/wheel_corpus.json.  `--truth` runs only the agreement part, untimed, for
every wheel (relforge's reader in-process against the full read) into wheel_corpus_truth.jsonl:
on a loaded machine auditwheel may not get through the corpus in time, the agreement still does.
Run it niced on a shared machine: `nice -n 10 .venv/bin/python benchmarks/bench_wheel_corpus.py`.
"""

from __future__ import annotations

import io
import json
import os
import platform
import random
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIRS = os.environ.get("RELFORGE_CORPUS_DIRS", "/opt/pypi-more/files:/opt/wheels:/opt/pypi/files")
BIN = Path(sys.executable).parent
GOAL = 12.0
RESULTS = ROOT / "benchmarks" / "results"
_CEILING = re.compile(r'constrains the platform tag to "([^"]+)"')


def corpus() -> list[Path]:
    seen: set[str] = set()
    found = []
    for directory in DIRS.split(":"):
        for path in sorted(Path(directory).glob("*.whl")) if Path(directory).is_dir() else []:
            platform_tags = path.name[:-4].split("-")[-1]
            if "linux" in platform_tags and path.name not in seen:
                seen.add(path.name)
                found.append(path)
    # a fixed shuffle: an interrupted run has measured a fair sample, not the largest wheels
    random.Random(13).shuffle(found)
    return found


def _warm(path: Path) -> None:
    with path.open("rb") as fh:
        while fh.read(8 << 20):
            pass


def _memory_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, RssAnon) of a running process: its peak RSS since exec — wait4's ru_maxrss also
    counts the parent's pages the child held before exec — and its anonymous memory now."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    found = [re.search(rf"{key}:\s+(\d+)", text) for key in ("VmHWM", "RssAnon")]
    hwm, anon = (int(m.group(1)) if m else 0 for m in found)
    return hwm, anon


def run(argv: list[str]) -> dict[str, Any]:
    """Wall time, exit code, stdout, peak RSS and peak anonymous RSS of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_anon = peak_rss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_anon, peak_rss
        while not done.is_set():
            hwm, anon = _memory_kib(proc.pid)
            peak_rss, peak_anon = max(peak_rss, hwm), max(peak_anon, anon)
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out_chunks: list[bytes] = []
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None  # both are PIPEs
    reader = threading.Thread(target=lambda: out_chunks.append(stdout.read()), daemon=True)
    reader.start()
    err = stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    done.set()
    reader.join()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": elapsed,
        "code": proc.returncode,
        "stdout": b"".join(out_chunks).decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace")[-2000:],
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "max_rss_kib": peak_rss or usage.ru_maxrss,
        "max_anon_kib": peak_anon,
    }


def full_read_ceiling(path: Path) -> tuple[str | None, int]:
    """The strictest manylinux policy the version needs of every ELF member fit, each member
    inflated whole and parsed with pyelftools; and the ELF bytes read."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    from relforge.validate.tagpolicy import strictest_policy, tag_arch

    arches = [a for a in (tag_arch(t) for t in path.name[:-4].split("-")[-1].split(".")) if a]
    needs: list[dict[str, tuple[str, ...]]] = []
    total = 0
    machine = None
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.is_dir() or info.file_size < 52:
                continue
            with zf.open(info) as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            data = zf.read(info)
            total += len(data)
            try:
                elf = ELFFile(io.BytesIO(data))
                machine = machine or {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}.get(
                    elf["e_machine"]
                )
                per: dict[str, tuple[str, ...]] = {}
                for section in elf.iter_sections():
                    if isinstance(section, GNUVerNeedSection):
                        for verneed, auxes in section.iter_versions():
                            name = verneed.name or "?"  # a nameless entry: a broken file
                            per[name] = (
                                *per.get(name, ()),
                                *(aux.name for aux in auxes),
                            )
                needs.append(per)
            except Exception:  # a malformed ELF: relforge reports it, the truth has no needs
                continue
            del data
    arch = arches[0] if arches else machine or "x86_64"
    if not needs:
        return None, total
    policy = strictest_policy(arch, needs)
    return (policy.name if policy else "none"), total


def _base(policy: str | None) -> str | None:
    """manylinux_2_17_x86_64 → manylinux_2_17 (auditwheel names the architecture)."""
    if policy is None:
        return None
    for arch in ("_x86_64", "_aarch64", "_i686", "_ppc64le", "_s390x", "_armv7l", "_riscv64"):
        if policy.endswith(arch):
            return policy[: -len(arch)]
    return policy


def main() -> None:
    wheels = corpus()
    if not wheels:
        raise SystemExit(f"no Linux wheels in {DIRS}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    progress = RESULTS / "wheel_corpus.jsonl"
    limit = int(os.environ.get("RELFORGE_CORPUS_LIMIT", "0")) or len(wheels)
    started = time.time()
    done = set()
    if progress.exists():
        done = {json.loads(line)["wheel"] for line in progress.read_text().splitlines() if line}
    with progress.open("a") as log:
        for index, wheel in enumerate(wheels[:limit], 1):
            if wheel.name in done:
                continue
            _warm(wheel)
            ours = run([str(BIN / "relforge"), "wheel", "inspect", str(wheel), "--format", "json"])
            theirs = run([str(BIN / "auditwheel"), "show", str(wheel)])
            truth, elf_bytes = (
                full_read_ceiling(wheel)
                if os.environ.get("RELFORGE_CORPUS_TRUTH") != "0"
                else (None, 0)
            )
            try:
                report = json.loads(ours["stdout"])
            except json.JSONDecodeError:
                report = {}
            match = _CEILING.search(" ".join(theirs["stdout"].split()))
            entry = {
                "wheel": wheel.name,
                "size_bytes": wheel.stat().st_size,
                "elf_bytes": elf_bytes,
                "relforge_seconds": round(ours["seconds"], 3),
                "relforge_cpu_seconds": round(ours["cpu_seconds"], 3),
                "relforge_exit": ours["code"],
                "relforge_max_rss_kib": ours["max_rss_kib"],
                "relforge_max_anon_kib": ours["max_anon_kib"],
                "relforge_ceiling": report.get("symbol_version_ceiling"),
                "relforge_failed": sorted(
                    v["check"] for v in report.get("verdicts", []) if v["status"] == "fail"
                ),
                "relforge_error": (report.get("error") or {}).get("message"),
                "auditwheel_seconds": round(theirs["seconds"], 3),
                "auditwheel_cpu_seconds": round(theirs["cpu_seconds"], 3),
                "auditwheel_exit": theirs["code"],
                "auditwheel_ceiling": _base(match.group(1)) if match else None,
                "full_read_ceiling": truth,
            }
            entry["agrees_with_full_read"] = entry["relforge_ceiling"] == truth
            log.write(json.dumps(entry) + "\n")
            log.flush()
            print(
                f"[{index}/{limit}] {wheel.name}: relforge {ours['seconds']:.2f}s "
                f"auditwheel {theirs['seconds']:.2f}s ceiling {entry['relforge_ceiling']} "
                f"truth {truth}",
                flush=True,
            )
    summarize(progress, started, complete=limit == len(wheels))


def truth() -> None:
    """Agreement only: relforge's ceiling (in-process) against the full read, every wheel."""
    from relforge.validate.inspect import inspect_wheel

    path = RESULTS / "wheel_corpus_truth.jsonl"
    done = set()
    if path.exists():
        done = {json.loads(line)["wheel"] for line in path.read_text().splitlines() if line}
    with path.open("a") as log:
        for wheel in corpus():
            if wheel.name in done:
                continue
            found = inspect_wheel(wheel)
            full, elf_bytes = full_read_ceiling(wheel)
            entry = {
                "wheel": wheel.name,
                "elf_bytes": elf_bytes,
                "relforge_ceiling": found.needs_policy,
                "full_read_ceiling": full,
                "agrees_with_full_read": found.needs_policy == full,
                "relforge_failed": sorted(v.check for v in found.contradictions),
            }
            log.write(json.dumps(entry) + "\n")
            log.flush()
            print(f"{wheel.name}: {found.needs_policy} / {full}", flush=True)


def summarize(progress: Path, started: float, *, complete: bool) -> None:
    """Totals from the per-wheel lines (also usable on a partial run)."""
    entries = [json.loads(line) for line in progress.read_text().splitlines() if line.strip()]
    ours = sum(e["relforge_seconds"] for e in entries)
    theirs = sum(e["auditwheel_seconds"] for e in entries)
    ours_cpu = sum(e["relforge_cpu_seconds"] for e in entries)
    theirs_cpu = sum(e["auditwheel_cpu_seconds"] for e in entries)
    truth_path = RESULTS / "wheel_corpus_truth.jsonl"
    truths = (
        [json.loads(x) for x in truth_path.read_text().splitlines() if x]
        if truth_path.exists()
        else []
    )
    by_wheel = {t["wheel"]: t["full_read_ceiling"] for t in truths}
    for e in entries:  # timed without the full read (RELFORGE_CORPUS_TRUTH=0): the truth pass's
        if e["full_read_ceiling"] is None and by_wheel.get(e["wheel"]) is not None:
            e["full_read_ceiling"] = by_wheel[e["wheel"]]
            e["agrees_with_full_read"] = e["relforge_ceiling"] == e["full_read_ceiling"]
    with_truth = [e for e in entries if e["full_read_ceiling"] is not None]
    disagree = [e for e in with_truth if not e["agrees_with_full_read"]]
    aw_disagree = [
        e for e in with_truth if e["auditwheel_ceiling"] not in (None, e["full_read_ceiling"])
    ]
    truth_versioned = [t for t in truths if t["full_read_ceiling"] is not None]
    peak = max(entries, key=lambda e: e["relforge_max_rss_kib"])
    peak_anon = max(entries, key=lambda e: e["relforge_max_anon_kib"])
    failed: dict[str, int] = {}
    for e in entries:
        for check in e["relforge_failed"]:
            failed[check] = failed.get(check, 0) + 1
    out = {
        "benchmark": "relforge wheel inspect vs auditwheel show over the machine's Linux wheels "
        "(fresh processes, sequential, back to back, page cache warmed for both)",
        "complete": complete,
        "wheels": len(entries),
        "total_bytes": sum(e["size_bytes"] for e in entries),
        "relforge_total_seconds": round(ours, 1),
        "auditwheel_total_seconds": round(theirs, 1),
        "speedup_vs_auditwheel": round(theirs / ours, 2) if ours else None,
        "relforge_total_cpu_seconds": round(ours_cpu, 1),
        "auditwheel_total_cpu_seconds": round(theirs_cpu, 1),
        "cpu_speedup_vs_auditwheel": round(theirs_cpu / ours_cpu, 2) if ours_cpu else None,
        "goal_speedup": GOAL,
        "meets_goal": bool(ours) and theirs / ours >= GOAL,
        "wheels_with_versioned_elf": len(with_truth),
        "relforge_agrees_with_full_read": len(with_truth) - len(disagree),
        "relforge_disagreements": [
            {k: e[k] for k in ("wheel", "relforge_ceiling", "full_read_ceiling")} for e in disagree
        ],
        "truth_pass_wheels": len(truths),
        "truth_pass_wheels_with_versioned_elf": len(truth_versioned),
        "truth_pass_relforge_agrees": sum(t["agrees_with_full_read"] for t in truth_versioned),
        "truth_pass_disagreements": [
            {k: t[k] for k in ("wheel", "relforge_ceiling", "full_read_ceiling")}
            for t in truth_versioned
            if not t["agrees_with_full_read"]
        ],
        "auditwheel_disagrees_with_full_read": len(aw_disagree),
        "auditwheel_disagreements": [
            {k: e[k] for k in ("wheel", "auditwheel_ceiling", "full_read_ceiling")}
            for e in aw_disagree
        ],
        "relforge_peak_rss_mib": round(peak["relforge_max_rss_kib"] / 1024, 1),
        "relforge_peak_rss_wheel": peak["wheel"],
        "relforge_peak_rss_wheel_size_mib": round(peak["size_bytes"] / 2**20, 1),
        "relforge_peak_anon_rss_mib": round(peak_anon["relforge_max_anon_kib"] / 1024, 1),
        "relforge_peak_anon_rss_wheel": peak_anon["wheel"],
        "relforge_failed_checks": dict(sorted(failed.items())),
        "wall_seconds": round(time.time() - started, 1),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "load_average_at_end": os.getloadavg(),
        "note": "the machine was shared with other jobs (load average above); both tools ran "
        "under the same load, back to back per wheel; wall time is the goal's measure, CPU "
        "time (user+sys of the process) is given because it varies less with the load",
    }
    path = RESULTS / "wheel_corpus.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if "disagreements" not in k}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--summarize"]:
        summarize(RESULTS / "wheel_corpus.jsonl", time.time(), complete=False)
    elif sys.argv[1:] == ["--truth"]:
        truth()
    else:
        main()
