"""Benchmark: `relforge publish` + `promote` + `index` on moto through a proxy that injects 10%
mixed transient faults (503 SlowDown, 500 before/after the write, 400 RequestTimeout, resets
before/after, bodies cut mid-stream, a byte flipped in an object body), for N seeds.

Side by side in one run, for each seed: the baseline (relforge's source at the commit before
retries existed, `git archive`d to a temporary directory: botocore's standard retries, no
verified re-reads) and this tree.  Each run is the real CLI (one process per command); a run
completes when every command exits 0 in one go, and is lossless when both buckets end
byte-identical to a fault-free run's.  Writes benchmarks/results/faults.json (rate, seeds,
completed, retries, injected faults by kind, seconds against the fault-free run).

    python benchmarks/bench_faults.py [--seeds 10] [--rate 0.1] [--baseline-ref REF]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.faultproxy import FaultProxy  # noqa: E402
from tests.integration.conftest import BIN, free_port, start_server, stop_server  # noqa: E402
from tests.promote_kit import matrix_text, release_wheels, write_manifest  # noqa: E402


def objects(client: Any, bucket: str) -> dict[str, str]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", ()):
            body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = hashlib.sha256(body).hexdigest()
    return out


def baseline_source(ref: str, into: Path) -> Path:
    """relforge's `src/` at `ref` (default: the parent of the commit that added retries)."""
    if not ref:
        added = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", "src/relforge/stores/retry.py"],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.split()  # fmt: skip
        ref = f"{added[-1]}~1"
    archive = subprocess.run(
        ["git", "archive", ref, "src"], capture_output=True, check=True, cwd=ROOT
    ).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def flow(
    work: Path, bucket: str, endpoint: str, manifest: Path, env: dict[str, str]
) -> dict[str, Any]:
    publishing = textwrap.dedent(f"""\
        publishing:
          store: s3://{bucket}/dl
          s3_endpoint_url: {endpoint}
          backup_store: s3://{bucket}-backup/tags
        """)
    matrix = work / f"{bucket}.yaml"
    matrix.write_text(matrix_text(publishing), encoding="utf-8")
    commands = [
        ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)],
        ["promote", str(matrix), "--version", "1.0.0"],
        ["index", str(matrix), "--channel", "release"],
        ["index", str(matrix), "--channel", "test"],
    ]
    retries = 0
    started = time.perf_counter()
    for argv in commands:
        done = subprocess.run(
            [sys.executable, "-m", "relforge", *argv, "--execute"],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
        )
        if done.returncode != 0:
            return {"completed": False, "failed": argv[0], "exit": done.returncode,
                    "stderr": done.stderr.strip()[-400:], "retries": retries}  # fmt: skip
        found = re.search(r"retries: (\d+)$", done.stdout.strip().splitlines()[-1])
        retries += int(found.group(1)) if found else 0
    return {"completed": True, "retries": retries, "seconds": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--baseline-ref", default="", help="git ref of the baseline's source")
    args = parser.parse_args()

    import boto3

    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    os.environ.update(env)
    with tempfile.TemporaryDirectory(prefix="relforge-bench-faults-") as tmp:
        work = Path(tmp)
        port = free_port()
        upstream = f"http://127.0.0.1:{port}"
        moto = start_server([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                      upstream, work / "moto.log")  # fmt: skip
        try:
            client = boto3.client("s3", endpoint_url=upstream)
            manifest = work / "dist" / "relforge-manifest.json"
            write_manifest(manifest, release_wheels(work / "dist"))

            def buckets(name: str) -> str:
                for bucket in (name, f"{name}-backup"):
                    client.create_bucket(Bucket=bucket)
                return name

            clean = flow(work, buckets("clean"), upstream, manifest, env)
            expected = (objects(client, "clean"), objects(client, "clean-backup"))
            base_src = baseline_source(args.baseline_ref, work / "baseline")
            base_env = {**env, "PYTHONPATH": str(base_src)}  # ahead of the editable install
            runs: list[dict[str, Any]] = []
            baseline: list[dict[str, Any]] = []
            for seed in range(1, args.seeds + 1):
                for label, out, run_env in (("base", baseline, base_env), ("new", runs, env)):
                    with FaultProxy(upstream=upstream, seed=seed, rate=args.rate) as proxy:
                        bucket = buckets(f"{label}-{seed}")
                        result = flow(work, bucket, proxy.url, manifest, run_env)
                        injected = dict(proxy.injected)
                        requests = proxy.requests
                    got = (objects(client, bucket), objects(client, f"{bucket}-backup"))
                    out.append(
                        {
                            "seed": seed,
                            **result,
                            "requests": requests,
                            "injected": injected,
                            "injected_total": sum(injected.values()),
                            "byte_identical_to_fault_free": got == expected,
                            "objects": len(got[0]) + len(got[1]),
                        }
                    )
                    print(label, json.dumps(out[-1]))
        finally:
            stop_server(moto)
    kinds: Counter[str] = Counter()
    for run in runs:
        kinds.update(run["injected"])
    report = {
        "benchmark": "publish + promote + index on moto through a fault-injecting proxy",
        "rate": args.rate,
        "seeds": [r["seed"] for r in runs],
        "completed": sum(1 for r in runs if r["completed"]),
        "runs": len(runs),
        "lossless": sum(1 for r in runs if r["byte_identical_to_fault_free"]),
        "retries": [r["retries"] for r in runs],
        "injected": [r["injected_total"] for r in runs],
        "every_fault_retried_once": all(r["retries"] == r["injected_total"] for r in runs),
        "injected_by_kind": dict(sorted(kinds.items())),
        "fault_free_seconds": clean.get("seconds"),
        "faulted_seconds": [r.get("seconds") for r in runs],
        "baseline": {
            "source": args.baseline_ref or "the commit before src/relforge/stores/retry.py",
            "completed": sum(1 for r in baseline if r["completed"]),
            "lossless": sum(
                1 for r in baseline if r["completed"] and r["byte_identical_to_fault_free"]
            ),
            "runs": len(baseline),
            "failures": [
                f"seed {r['seed']}: {r.get('stderr', '')}" for r in baseline if not r["completed"]
            ],
        },
        "details": runs,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy)",
    }
    path = ROOT / "benchmarks" / "results" / "faults.json"
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(
        f"{report['completed']}/{report['runs']} completed, {report['lossless']} lossless → {path}"
    )
    return 0 if report["completed"] == report["runs"] == report["lossless"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
