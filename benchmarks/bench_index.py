"""Benchmark: `relforge index` of one folder of N wheels (default 10,000) on a moto S3 server,
side by side in one run with a plain boto3 script doing the floor work.

The folder is what `relforge publish` leaves: N small generated wheels (real zips) with their
`.metadata` sidecars (sha256 as metadata and as the S3 checksum) and one stored manifest per
version (20 wheels per version: 5 Pythons x 4 platforms, as a nightly of one project).

Goals (issue 11):
- full index (no pages yet) <= 1.2 x the floor "list the folder + one HEAD per object";
- re-index after one new wheel (+ sidecar + manifest) <= 1.5 x one listing of the folder.

relforge runs the engine the CLI runs (`Vouchers` + `plan_folder` + `apply_folder`, 32 workers
as `relforge index` defaults to); the floor uses the same client settings and 32 threads.
Usage: python benchmarks/bench_index.py [N]   (writes benchmarks/results/index.json)
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BUCKET = "bench-index"
FOLDER = "whl/nightly/cpu"
PYTHONS = ("cp39", "cp310", "cp311", "cp312", "cp313")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64")
WORKERS = 32
REINDEX_ROUNDS = 3
FULL_ROUNDS = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client_for(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        max_pool_connections=64,
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": "path"},
    )
    return boto3.session.Session().client("s3", endpoint_url=endpoint, config=config)


def wheel(version: str, python: str, plat: str) -> tuple[str, bytes, bytes]:
    """(file name, wheel bytes, METADATA) of a small generated wheel."""
    name = f"bench-{version}-{python}-{python}-{plat}.whl"
    meta = (
        f"Metadata-Version: 2.1\nName: bench\nVersion: {version}\nRequires-Python: >=3.9\n\n"
    ).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        info = f"bench-{version}.dist-info"
        zf.writestr("bench/__init__.py", f"VERSION = {version!r}\n")
        zf.writestr(f"{info}/METADATA", meta)
        zf.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nTag: {python}-{python}-{plat}\n")
        zf.writestr(f"{info}/RECORD", "")
    return name, buf.getvalue(), meta


def put(client: Any, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
    digest = hashlib.sha256(data)
    client.put_object(
        Bucket=BUCKET,
        Key=key,
        Body=data,
        ContentType=content_type,
        ChecksumAlgorithm="SHA256",
        ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
        Metadata={"sha256": digest.hexdigest()},
    )


def publish_version(client: Any, day: int, pool: ThreadPoolExecutor) -> int:
    """One version's wheels, sidecars and stored manifest, as `relforge publish` leaves them."""
    from relforge.manifest import ArtifactManifest, ManifestEntry
    from relforge.promote.channel import manifest_bytes, manifest_key, public_version

    version = f"1.0.0.dev{day:05d}"
    local = f"{version}+cpu"
    entries, uploads = [], []
    for python in PYTHONS:
        for plat in PLATFORMS:
            name, data, meta = wheel(local, python, plat)
            key = f"{FOLDER}/{name}"
            uploads += [(key, data), (key + ".metadata", meta)]
            entries.append(
                ManifestEntry(
                    cell_id=f"wheel-{plat}-{python}-cpu",
                    file=f"dist/{name}",
                    size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(),
                    version=local,
                    package_type="wheel",
                    variant="cpu",
                    upload_subfolder="cpu",
                    metadata_sha256=hashlib.sha256(meta).hexdigest(),
                    metadata_size=len(meta),
                    requires_python=">=3.9",
                )
            )
    manifest = ArtifactManifest(project="bench", release="1.0", channel="nightly")
    manifest = manifest.with_entries(entries)
    uploads.append((manifest_key(manifest, public_version(version)), manifest_bytes(manifest)))
    list(pool.map(lambda kv: put(client, kv[0], kv[1]), uploads))
    return len(entries)


def floor_list(endpoint: str) -> tuple[float, list[str]]:
    """One listing of the folder, by a script that makes its own client (as the CLI does)."""
    start = time.perf_counter()
    client = client_for(endpoint)
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=FOLDER + "/"
    ):
        keys += [o["Key"] for o in page.get("Contents", ())]
    return time.perf_counter() - start, keys


def floor_list_and_head(endpoint: str) -> float:
    """List the folder, then one HEAD per wheel and sidecar (what a verifying indexer must
    at least do: one request per object)."""
    start = time.perf_counter()
    _, keys = floor_list(endpoint)
    client = client_for(endpoint)
    objects = [k for k in keys if k.endswith((".whl", ".metadata"))]
    with ThreadPoolExecutor(WORKERS) as pool:
        list(
            pool.map(
                lambda k: client.head_object(Bucket=BUCKET, Key=k, ChecksumMode="ENABLED"),
                objects,
            )
        )
    return time.perf_counter() - start


def relforge_index(endpoint: str) -> tuple[float, Any]:
    from tests.unit.test_promote_index import UNJUDGED  # no release 1.0: nothing withheld

    from relforge.promote.cells import ChannelCells
    from relforge.promote.channelview import view_of
    from relforge.promote.index.folder import apply_folder, plan_folder, refuse_drift
    from relforge.promote.vouch import Vouchers
    from relforge.signing import Trust
    from relforge.stores.s3 import S3Store

    store = S3Store(bucket=BUCKET, endpoint_url=endpoint)
    start = time.perf_counter()
    vouchers = Vouchers(
        store, channel="nightly", project="bench", prefix="whl/nightly", trust=Trust()
    )
    view = view_of(vouchers, ChannelCells(UNJUDGED, "nightly"))
    plan = plan_folder(store, FOLDER, view, workers=WORKERS)
    refuse_drift([plan], store)
    if plan.changed:
        apply_folder(store, plan, workers=WORKERS)
    return time.perf_counter() - start, plan


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    per_version = len(PYTHONS) * len(PLATFORMS)
    versions = count // per_version
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        log = Path(tmp) / "moto.log"
        moto = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        try:
            client = client_for(endpoint)
            for _ in range(200):
                try:
                    client.create_bucket(Bucket=BUCKET)
                    break
                except Exception:
                    time.sleep(0.1)
            seed_start = time.perf_counter()
            with ThreadPoolExecutor(WORKERS) as pool:
                wheels = sum(publish_version(client, day, pool) for day in range(versions))
            seeded = time.perf_counter() - seed_start
            print(f"seeded {wheels} wheels in {seeded:.0f} s", flush=True)

            floors_full, fulls = [], []
            for r in range(FULL_ROUNDS):
                client.delete_object(Bucket=BUCKET, Key=f"{FOLDER}/.relforge-pages.json")
                if r % 2:  # alternate who goes first: the machine is shared and noisy
                    floors_full.append(floor_list_and_head(endpoint))
                full, plan = relforge_index(endpoint)
                if not r % 2:
                    floors_full.append(floor_list_and_head(endpoint))
                fulls.append(full)
                assert plan.verified == wheels and not plan.unvouched and not plan.drift, (
                    plan.verified,
                    plan.unvouched[:3],
                    plan.drift[:3],
                )
                print(f"full: relforge {full:.1f} s, floor {floors_full[-1]:.1f} s", flush=True)

            listings, reindexes, carried = [], [], []
            for r in range(REINDEX_ROUNDS):
                # one new wheel (and its sidecar and manifest): a new version of one cell
                day = versions + r
                name, data, meta = wheel(f"1.0.0.dev{day:05d}+cpu", "cp313", "win_amd64")
                one_new(client, name, data, meta, day)
                if r % 2:
                    listings.append(floor_list(endpoint)[0])
                seconds, plan = relforge_index(endpoint)
                if not r % 2:
                    listings.append(floor_list(endpoint)[0])
                assert plan.rebuild == ("bench",) and plan.verified == 1, plan
                reindexes.append(seconds)
                carried.append(plan.carried)
                print(f"re-index: relforge {seconds:.1f} s, listing {listings[-1]:.1f} s")
        finally:
            moto.terminate()
            moto.wait()
    reindex, listing = statistics.median(reindexes), statistics.median(listings)
    full, floor_full = statistics.median(fulls), statistics.median(floors_full)
    result = {
        "benchmark": (
            f"relforge index of one folder of {wheels} wheels (+ sidecars, {versions} stored "
            "manifests) on moto vs a plain boto3 floor"
        ),
        "wheels": wheels,
        "objects_in_folder": 2 * wheels,
        "full_index": {
            "relforge_seconds": fulls,
            "floor_list_plus_head_per_object_seconds": floors_full,
            "ratio_of_medians": full / floor_full,
            "goal": "<= 1.2",
            "meets_goal": full / floor_full <= 1.2,
        },
        "reindex_after_one_new_wheel": {
            "relforge_seconds": reindexes,
            "floor_one_listing_seconds": listings,
            "files_carried_from_the_committed_page": carried,
            "ratio_of_medians": reindex / listing,
            "goal": "<= 1.5",
            "meets_goal": reindex / listing <= 1.5,
        },
        "seed_seconds": seeded,
        "load_average_at_end": os.getloadavg(),
        "workers": WORKERS,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy; other jobs running)",
    }
    path = ROOT / "benchmarks" / "results" / "index.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def one_new(client: Any, name: str, data: bytes, meta: bytes, day: int) -> None:
    from relforge.manifest import ArtifactManifest, ManifestEntry
    from relforge.promote.channel import manifest_bytes, manifest_key, public_version

    version = f"1.0.0.dev{day:05d}"
    key = f"{FOLDER}/{name}"
    entry = ManifestEntry(
        cell_id="wheel-win_amd64-cp313-cpu",
        file=f"dist/{name}",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        version=f"{version}+cpu",
        package_type="wheel",
        variant="cpu",
        upload_subfolder="cpu",
        metadata_sha256=hashlib.sha256(meta).hexdigest(),
        metadata_size=len(meta),
        requires_python=">=3.9",
    )
    manifest = ArtifactManifest(project="bench", release="1.0", channel="nightly")
    manifest = manifest.with_entries([entry])
    put(client, key, data)
    put(client, key + ".metadata", meta)
    put(client, manifest_key(manifest, public_version(version)), manifest_bytes(manifest))


if __name__ == "__main__":
    main()
