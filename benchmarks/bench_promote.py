"""Benchmark: promoting 2,000 small objects on a moto S3 server vs `aws s3 cp --recursive`.

Goal (issue 8): at least the throughput of `aws s3 cp --recursive` (awscli, the `bench` extra)
while verifying every hash.  relforge runs its promotion engine — the plan (listings of source
and destination, conditional server-side copies with the service computing each copy's SHA-256,
compared with the expected one, journaled) — on one batch of 2,000 objects, as `relforge
promote` does for the artifacts of a manifest (a matrix cannot hold 2,000 cells, so the batch
is built here rather than from a manifest).  No backup copies or index, as `aws s3 cp` does
neither.  Writes benchmarks/results/promote.json.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OBJECTS = 2000
SIZE = 4096
BUCKET = "bench-promote"
ROUNDS = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(client: Any, count: int) -> dict[str, str]:
    """Objects as `relforge publish` leaves them: sha256 as metadata and as the S3 checksum."""

    def put(i: int) -> tuple[str, str]:
        data = os.urandom(SIZE)
        digest = hashlib.sha256(data)
        key = f"whl/test/cpu/pkg-{i:05d}.whl"
        client.put_object(
            Bucket=BUCKET,
            Key=key,
            Body=data,
            ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
            Metadata={"sha256": digest.hexdigest()},
        )
        return key, digest.hexdigest()

    with ThreadPoolExecutor(16) as pool:
        return dict(pool.map(put, range(count)))


def relforge_promote(endpoint: str, objects: dict[str, str], dest: str) -> tuple[float, int]:
    from relforge.promote.plans.storeplan import StorePlan, execute
    from relforge.stores.s3 import S3Store
    from relforge.stores.transfer import Transfer, plan_batch

    store = S3Store(bucket=BUCKET, endpoint_url=endpoint)
    start = time.perf_counter()
    transfers = [
        Transfer(
            key=f"{dest}/{key.rsplit('/', 1)[1]}",
            sha256=sha,
            size=SIZE,
            what="bench",
            source_key=key,
        )
        for key, sha in objects.items()
    ]
    batch = plan_batch(store, transfers, source=store, label="release")
    plan = StorePlan(command="bench-promote", title="bench", batches=(batch,), store=store)
    outcome = execute(plan, lambda _line: None)
    return time.perf_counter() - start, outcome.created


def aws_copy(endpoint: str, dest: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            str(BIN / "aws"),
            "s3",
            "cp",
            "--recursive",
            "--only-show-errors",
            "--endpoint-url",
            endpoint,
            f"s3://{BUCKET}/whl/test/cpu/",
            f"s3://{BUCKET}/{dest}/",
        ],
        check=True,
    )
    return time.perf_counter() - start


def main() -> None:
    import boto3

    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-promote-") as tmp:
        log = Path(tmp) / "moto.log"
        moto = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        os.chdir(tmp)  # the journal goes to .relforge/journal here
        try:
            client = boto3.client("s3", endpoint_url=endpoint)
            for _ in range(100):
                try:
                    client.create_bucket(Bucket=BUCKET)
                    break
                except Exception:
                    time.sleep(0.1)
            objects = seed(client, OBJECTS)
            ours, theirs = [], []
            for r in range(ROUNDS):  # alternate, each into a fresh prefix
                theirs.append(aws_copy(endpoint, f"aws-{r}"))
                seconds, created = relforge_promote(endpoint, objects, f"whl/release-{r}")
                assert created == OBJECTS
                ours.append(seconds)
        finally:
            moto.terminate()
            moto.wait()
    best_ours, best_theirs = min(ours), min(theirs)
    result = {
        "benchmark": f"promote {OBJECTS} objects of {SIZE} B on moto vs aws s3 cp --recursive",
        "relforge_seconds": ours,
        "aws_s3_cp_seconds": theirs,
        "relforge_objects_per_second": OBJECTS / best_ours,
        "aws_objects_per_second": OBJECTS / best_theirs,
        "relforge_verifies_every_sha256": True,
        "goal": "relforge throughput >= aws s3 cp throughput",
        "meets_goal": best_ours <= best_theirs,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy)",
    }
    path = ROOT / "benchmarks" / "results" / "promote.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
