"""Benchmark: `relforge verify` of one folder of N wheels (each with its PEP 658 sidecar) on a
moto S3 server, side by side with a full `relforge index` of the same folder.

Goal (issue 11): verify stays within 2x of a full index.  Both run the engines the commands
run: the index is `plan_folder` + `apply_folder` with every project page rebuilt (a full
index); verify is `check_channel` (read the stored manifests, list the folder, hash every
wheel and sidecar by downloading it — no recorded hash is trusted — and read the pages back).
The wheels are real zips with METADATA, their sidecars equal that METADATA; the manifests carry
the sidecar digest (`metadata_sha256`) as publish records it.  A matrix of 40 cells (8 Pythons
x 5 platform tags) with N/40 versions, one stored manifest per version, fills the folder.

    python benchmarks/bench_verify.py [N]       (default 10000)

Writes benchmarks/results/verify.json.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # relforge itself is imported where used
    from relforge.matrix.schema import Matrix
    from relforge.stores.objectstore import ObjectStore

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BUCKET = "bench-verify"
ROUNDS = 2
WORKERS = 32
PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t"]
TAGS = [
    "manylinux_2_17_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_28_aarch64",
    "musllinux_1_2_x86_64",
    "musllinux_1_2_aarch64",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def matrix_text(endpoint: str) -> str:
    plats = "\n".join(
        f"      p{i}: {{os: linux, arch: {t.split('_', 3)[-1]}, platform_tag: {t}}}"
        for i, t in enumerate(TAGS)
    )
    on = ", ".join(f"p{i}: {{}}" for i in range(len(TAGS)))
    python = ", ".join(f'"{p}"' for p in PYTHONS)
    return f"""\
schema_version: 1
project:
  name: rfbench
channels:
  test: {{version_scheme: final, prefix: whl/test}}
publishing:
  store: s3://{BUCKET}/dl
  s3_endpoint_url: {endpoint}
releases:
  "1.0":
    date: 2026-01-01
    python: [{python}]
    platforms:
{plats}
    accelerators:
      cpu:
        kind: cpu
        platforms: {{{on}}}
"""


def wheel(name: str, version: str) -> tuple[bytes, bytes]:
    """A small real wheel and its METADATA."""
    metadata = (
        f"Metadata-Version: 2.1\nName: rfbench\nVersion: {version}\nRequires-Python: >=3.9\n"
    ).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("rfbench/__init__.py", os.urandom(2048).hex())
        zf.writestr(f"rfbench-{version}.dist-info/METADATA", metadata)
        zf.writestr(f"rfbench-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    return buf.getvalue(), metadata


def seed(client: Any, matrix: Matrix, count: int) -> str:
    """Wheels, sidecars and one stored manifest per version, as publish writes them."""
    from relforge.manifest import ArtifactManifest, ManifestEntry
    from relforge.matrix.expand import expand_cells
    from relforge.promote.channel import manifest_bytes, manifest_key

    cells = expand_cells(matrix, "1.0", channel="test")
    versions = max(1, count // len(cells))

    def put(key: str, data: bytes) -> None:
        digest = hashlib.sha256(data)
        client.put_object(
            Bucket=BUCKET,
            Key=f"dl/{key}",
            Body=data,
            ChecksumAlgorithm="SHA256",  # as relforge's own writes: HEAD returns the checksum
            ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
            Metadata={"sha256": digest.hexdigest()},
        )

    def one_version(v: int) -> None:
        version = f"1.0.{v}+cpu"
        entries = []
        for cell in cells:
            assert cell.python is not None  # wheel cells name their Python
            abi = f"cp{cell.python.replace('.', '').replace('t', '')}"
            abi += "t" if cell.python.endswith("t") else ""
            name = f"rfbench-{version}-{abi}-{abi}-{cell.platform_tag}.whl"
            data, metadata = wheel(name, version)
            put(f"{cell.upload_prefix}{name}", data)
            put(f"{cell.upload_prefix}{name}.metadata", metadata)
            entries.append(
                ManifestEntry(
                    cell_id=cell.id,
                    file=name,
                    size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(),
                    version=version,
                    package_type="wheel",
                    variant="cpu",
                    upload_subfolder="cpu",
                    platform_tag=cell.platform_tag,
                    python=str(cell.python),
                    metadata_sha256=hashlib.sha256(metadata).hexdigest(),
                    metadata_size=len(metadata),
                    requires_python=">=3.9",
                )
            )
        manifest = ArtifactManifest(project="rfbench", release="1.0", channel="test")
        manifest = manifest.with_entries(entries)
        put(manifest_key(manifest, f"1.0.{v}"), manifest_bytes(manifest))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one_version, range(versions)))
    return str(cells[0].upload_prefix).rstrip("/")


def full_index(matrix: Matrix, store: ObjectStore, folder: str) -> float:
    """A full `relforge index` of the folder: its page-set marker removed first, so every
    project is rebuilt from the stored manifests (each object checked by one HEAD)."""
    from relforge.promote.channelview import channel_view
    from relforge.promote.index.folder import apply_folder, plan_folder, refuse_drift
    from relforge.promote.index.pageset import MARKER
    from relforge.promote.publishing import open_publishing

    start = time.perf_counter()
    store.delete(f"{folder}/{MARKER}")
    view = channel_view(open_publishing(matrix).channel("test"), store=store)
    plan = plan_folder(store, folder, view, workers=WORKERS)
    refuse_drift([plan], store)
    apply_folder(store, plan, workers=WORKERS)
    return time.perf_counter() - start


def verify(matrix: Matrix) -> tuple[float, int, int]:
    from relforge.promote.integrity.verification import VerifyRequest, check_channel

    start = time.perf_counter()
    request = VerifyRequest(matrix=matrix, channel="test", store_name="main", workers=WORKERS)
    outcome = check_channel(request)
    seconds = time.perf_counter() - start
    (report,) = outcome.before.stores
    return seconds, report.objects_checked, len(report.findings)


def main() -> None:
    import boto3

    from relforge.matrix.load import load_matrix
    from relforge.matrixstores import main_store

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        log = Path(tmp) / "moto.log"
        moto = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        os.chdir(tmp)
        try:
            client = boto3.client("s3", endpoint_url=endpoint)
            for _ in range(100):
                try:
                    client.create_bucket(Bucket=BUCKET)
                    break
                except Exception:
                    time.sleep(0.1)
            path = Path(tmp) / "matrix.yaml"
            path.write_text(matrix_text(endpoint), encoding="utf-8")
            matrix = load_matrix(path)
            started = time.perf_counter()
            folder = seed(client, matrix, count)
            seeding = time.perf_counter() - started
            store = main_store(matrix)
            indexes, verifies = [], []
            for _ in range(ROUNDS):  # alternate, the same folder each time
                indexes.append(full_index(matrix, store, folder))
                seconds, checked, findings = verify(matrix)
                assert findings == 0, f"{findings} findings on an untouched folder"
                verifies.append(seconds)
        finally:
            moto.terminate()
            moto.wait()
    best_index, best_verify = min(indexes), min(verifies)
    result = {
        "benchmark": f"verify vs full index of one folder of {count} wheels (+ sidecars) on moto",
        "wheels": count,
        "objects_hashed_by_verify": checked,
        "seed_seconds": seeding,
        "full_index_seconds": indexes,
        "verify_seconds": verifies,
        "ratio_verify_to_index": best_verify / best_index,
        "goal": "verify <= 2x a full index",
        "meets_goal": best_verify <= 2 * best_index,
        "verify_downloads_every_object": True,
        "workers": WORKERS,
        "commit": subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy)",
    }
    out = ROOT / "benchmarks" / "results" / "verify.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
