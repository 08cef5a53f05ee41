"""Benchmark: release-size artifacts on S3 (issue 26), side by side in one run, on moto patched
to keep large objects in files (benchmarks/lean_moto.py; plain moto reads a whole 6 GiB object
into memory, twice, for every ranged GET).

1. big: a 6 GiB wheel published to the main store and to a mirror on a second moto endpoint,
   promoted (server-side copies; streamed to the mirror) and verified, each endpoint behind a
   proxy that refuses, as AWS does, any single PUT or copy over 5 GiB (tests/faultproxy.py).
   Beside it, relforge before multipart (`git archive` of --baseline-ref) publishing the same
   artifact through the same proxy.
2. throughput: 4 × 1 GiB wheels, `aws s3 cp --recursive` of the files (awscli's defaults: 8 MiB
   parts, 10 in flight) against relforge on the same moto, rounds alternated: the transfer
   (`S3Store.put_if_absent` of the 4 files in parallel, as `publish` applies its plan: parts,
   the whole sha256 before completion, the composite checked after) and the whole
   `relforge publish --no-index` (which also hashes every file against its manifest before it
   writes anything, and stores sidecars and the manifest).
3. resume: a publish of a 2 GiB wheel killed once half its bytes went out; the rerun's part bytes
   against the bytes the service was still missing.
4. peak RSS of every relforge process (os.wait4's ru_maxrss).

Files are written to --workdir (default /tmp), streamed, never held in memory.  Writes
benchmarks/results/multipart.json.

    python benchmarks/bench_multipart.py [--big-gib 6] [--throughput-gib 1] [--rounds 2]
        [--resume-gib 2] [--only big,throughput,resume] [--baseline-ref 98e3e3b]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_faults import baseline_source  # noqa: E402  # relforge at a ref, `git archive`d
from tests.faultproxy import FaultProxy  # noqa: E402
from tests.integration.conftest import BIN, free_port  # noqa: E402
from tests.promote_kit import build_wheel, matrix_head, write_manifest  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
CEILING = 5 * GIB  # what AWS S3 takes in one PUT or copy
ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
       "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
CELLS = {  # cell id → (variant, platform tag, pypi default)
    "wheel-linux-x86_64-py3.11-cpu": ("cpu", "manylinux_2_28_x86_64"),
    "wheel-linux-x86_64-py3.11-cu128": ("cu128", "manylinux_2_28_x86_64"),
    "wheel-linux-aarch64-py3.11-cpu": ("cpu", "manylinux_2_28_aarch64"),
    "wheel-linux-aarch64-py3.11-cu128": ("cu128", "manylinux_2_28_aarch64"),
}
BIG_CELL = "wheel-linux-x86_64-py3.11-cu128"


def matrix_text(publishing: str) -> str:
    """Release 1.0 of `rfdemo` on linux x86_64 and aarch64, cpu and cu128: four wheels."""
    return (
        matrix_head(size_limit_mb=8000)
        + publishing
        + textwrap.dedent("""\
        releases:
          "1.0":
            date: 2026-01-01
            python: ["3.11"]
            platforms:
              linux-x86_64: {os: linux, arch: x86_64, platform_tag: manylinux_2_28_x86_64}
              linux-aarch64: {os: linux, arch: aarch64, platform_tag: manylinux_2_28_aarch64}
            accelerators:
              cpu: {kind: cpu, platforms: {linux-x86_64: {}, linux-aarch64: {}}}
              cu128:
                kind: cuda
                version: 12.8.1
                platforms: {linux-x86_64: {}, linux-aarch64: {}}
            pypi_default: {linux-x86_64: cu128, linux-aarch64: cu128}
        """)
    )


def padded(base: Path, out: Path, size: int, seed: int) -> Path:
    """`base` (a real wheel) with `rfdemo/blob.bin` of `size` bytes added (stored, zip64),
    streamed from a 1 MiB random block so nothing large is ever in memory; RECORD lists it."""
    import random

    block = random.Random(seed).randbytes(MIB)

    def blob() -> Iterator[bytes]:
        left = size
        while left > 0:
            yield block[: min(left, MIB)]
            left -= MIB

    digest = hashlib.sha256()
    for chunk in blob():
        digest.update(chunk)
    row = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    target = out / base.name
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data += f"rfdemo/blob.bin,sha256={row},{size}\n".encode()
            dst.writestr(info, data)
        with dst.open(zipfile.ZipInfo("rfdemo/blob.bin"), "w", force_zip64=True) as member:
            for chunk in blob():
                member.write(chunk)
    return target


def release(work: Path, sizes: dict[str, int]) -> Path:
    """A manifest of the 1.0.0 wheels of `sizes`' cells, each padded to its size (0: as built)."""
    wheels = {}
    for seed, (cell_id, size) in enumerate(sizes.items()):
        variant, plat = CELLS[cell_id]
        base = build_wheel(work / "built", version=f"1.0.0+{variant}", plat=plat, payload=cell_id)
        wheels[cell_id] = padded(base, work / "dist", size, seed) if size else base
    manifest = work / "dist" / "relforge-manifest.json"
    write_manifest(manifest, wheels, cells=CELLS)
    return manifest


@dataclass
class Ran:
    argv: str
    exit: int
    seconds: float
    peak_rss_mib: float
    last_line: str
    cpu_seconds: float = 0.0


def timed(argv: list[str], work: Path, label: str) -> Ran:
    """Any command in its own process: its time, CPU and peak RSS."""
    ran = measured(argv, work, work / "other.log", {**os.environ, **ENV})
    ran.argv = label
    print(json.dumps(asdict(ran)), flush=True)
    return ran


def vm_hwm(pid: int) -> int:
    """The peak RSS (KiB) of a running process so far, 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def put_files(url: str, bucket: str, files: list[str]) -> None:
    """`--put`: the 4 files into `bucket` as publish's apply step writes them (in parallel,
    create-if-absent, hash-checked), with relforge's default transfer settings."""
    from concurrent.futures import ThreadPoolExecutor

    from relforge.manifest import sha256_file
    from relforge.stores.s3 import S3Store

    store = S3Store(bucket=bucket, endpoint_url=url)
    paths = [Path(f) for f in files]
    hashes = {p: sha256_file(p) for p in paths}  # not timed apart: publish hashes them too
    with ThreadPoolExecutor(len(paths)) as pool:
        done = list(pool.map(lambda p: store.put_if_absent(f"dl/{p.name}", p, hashes[p]), paths))
    assert all(done)


def measured(argv: list[str], work: Path, log: Path, env: dict[str, str]) -> Ran:
    """`argv` run under GNU time, which forks it from a small process: a child forked from this
    one would count this process's memory until its exec (os.wait4's ru_maxrss did)."""
    stats = work / "time.out"
    started = time.perf_counter()
    with log.open("ab") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", str(stats), *argv],
            cwd=work,
            env=env,
            stdout=out,
            stderr=out,
        )
    seconds = time.perf_counter() - started
    kib, user, system = stats.read_text().split()[-3:]
    return Ran(
        argv="",
        exit=done.returncode,
        seconds=round(seconds, 1),
        peak_rss_mib=round(int(kib) / 1024, 1),
        last_line="",
        cpu_seconds=round(float(user) + float(system), 1),
    )


def relforge(
    argv: list[str], work: Path, *, src: Path | None = None, log: Path | None = None
) -> Ran:
    """One `relforge` command in its own process: its time, CPU and peak RSS."""
    env = {**os.environ, **ENV}
    if src is not None:
        env["PYTHONPATH"] = str(src)  # the baseline's source, ahead of the editable install
    log = log or work / "relforge.log"
    ran = measured([sys.executable, "-m", "relforge", *argv], work, log, env)
    tail = log.read_text(errors="replace").strip().splitlines()
    ran.argv = " ".join(argv[:1] + [a for a in argv[1:] if a.startswith("--")])
    ran.last_line = tail[-1][:300] if tail else ""
    print(json.dumps(asdict(ran)), flush=True)
    return ran


@contextlib.contextmanager
def lean_moto(work: Path, name: str) -> Iterator[str]:
    """A patched moto server whose temporary files live under `work/name`."""
    import requests

    files = work / name
    files.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (work / f"{name}.log").open("wb")
    argv = [sys.executable, str(ROOT / "benchmarks" / "lean_moto.py"), "-H", "127.0.0.1"]
    proc = subprocess.Popen(
        [*argv, "-p", str(port)], stdout=log, stderr=log, env={**os.environ, "TMPDIR": str(files)}
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(url, timeout=1)
                break
            except requests.RequestException:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"moto did not start: see {log.name}") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(files, ignore_errors=True)


def client(url: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(read_timeout=600, retries={"max_attempts": 2})
    return boto3.client("s3", endpoint_url=url, config=config)


def sha256_of(s3: Any, bucket: str, key: str) -> str:
    """The object's sha256 read straight from moto in 64 MiB ranges (not through relforge)."""
    size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    digest = hashlib.sha256()
    for start in range(0, size, 64 * MIB):
        end = min(size, start + 64 * MIB) - 1
        body = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end}")["Body"]
        for chunk in body.iter_chunks(MIB):
            digest.update(chunk)
    return digest.hexdigest()


def big(work: Path, size: int, baseline_ref: str) -> dict[str, Any]:
    manifest = release(work / "big", {**dict.fromkeys(CELLS, 0), BIG_CELL: size})
    (wheel,) = (work / "big" / "dist").glob("rfdemo-1.0.0+cu128-*.whl")
    sha = hashlib.sha256()
    with wheel.open("rb") as f:
        while chunk := f.read(8 * MIB):
            sha.update(chunk)
    expected = sha.hexdigest()
    with (
        lean_moto(work, "moto-main") as main_url,
        lean_moto(work, "moto-far") as far_url,
        FaultProxy(upstream=main_url, seed=1, rate=0.0, max_request=CEILING) as main,
        FaultProxy(upstream=far_url, seed=2, rate=0.0, max_request=CEILING) as far,
    ):
        s3, s3_far = client(main_url), client(far_url)
        for name in ("bench", "bench-backup", "base", "base-backup"):
            s3.create_bucket(Bucket=name)
        s3_far.create_bucket(Bucket="bench-far")
        matrix = work / "big.yaml"
        matrix.write_text(
            matrix_text(
                textwrap.dedent(f"""\
                publishing:
                  store: s3://bench/dl
                  s3_endpoint_url: {main.url}
                  backup_store: s3://bench-backup/tags
                  mirrors:
                    - {{name: far, url: "s3://bench-far/dl", endpoint_url: "{far.url}"}}
                """)
            ),
            encoding="utf-8",
        )
        base_matrix = work / "base.yaml"
        base_matrix.write_text(
            matrix_text(f"publishing:\n  store: s3://base/dl\n  s3_endpoint_url: {main.url}\n"),
            encoding="utf-8",
        )
        src = baseline_source(baseline_ref, work / "baseline")
        publish = ["--channel", "test", "--manifest", str(manifest), "--execute"]
        base = relforge(["publish", str(base_matrix), *publish], work, src=src)
        refused_before = dict(main.refused)
        main.refused.clear()
        commands = [
            relforge(["publish", str(matrix), *publish], work),
            relforge(["promote", str(matrix), "--version", "1.0.0", "--execute"], work),
            relforge(["verify", str(matrix), "--channel", "test"], work),
            relforge(["verify", str(matrix), "--channel", "release"], work),
        ]
        key = "dl/whl/test/cu128/" + wheel.name
        release_key = key.replace("/whl/test/", "/whl/")
        heads = {
            f"{bucket}/{k}": (h["ContentLength"], h["ETag"], h["Metadata"].get("sha256"))
            for c, bucket, k in (
                (s3, "bench", key),
                (s3, "bench", release_key),
                (s3_far, "bench-far", key),
                (s3_far, "bench-far", release_key),
            )
            for h in [c.head_object(Bucket=bucket, Key=k)]
        }
        streamed = sha256_of(s3_far, "bench-far", release_key)  # the copy across endpoints
        open_uploads = len(s3.list_multipart_uploads(Bucket="bench").get("Uploads", [])) + len(
            s3_far.list_multipart_uploads(Bucket="bench-far").get("Uploads", [])
        )
        operations = {"main": dict(main.operations), "far": dict(far.operations)}
        refused = {"main": dict(main.refused), "far": dict(far.refused)}
    return {
        "artifact_bytes": wheel.stat().st_size,
        "ceiling_bytes": CEILING,
        "commands": [asdict(c) for c in commands],
        "succeeded": all(c.exit == 0 for c in commands),
        "verify_clean": commands[2].exit == 0 and commands[3].exit == 0,
        "objects": {
            k: {"bytes": v[0], "etag": v[1], "sha256_ok": v[2] == expected}
            for k, v in heads.items()
        },
        "mirror_copy_rehashed_ok": streamed == expected,
        "uploads_left_open": open_uploads,
        "refused_by_proxy": refused,
        "operations": operations,
        "baseline": {
            "ref": baseline_ref,
            **asdict(base),
            "refused_by_proxy": refused_before,
        },
    }


def aws_cli(work: Path) -> Path:
    """The `aws` of the bench extra, or of a private venv (awscli pins docutils, which the
    project's venv needs newer)."""
    if (BIN / "aws").exists():
        return BIN / "aws"
    venv = Path.home() / ".cache" / "relforge" / "bench-awscli"
    if not (venv / "bin" / "aws").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "awscli"], check=True)
    return venv / "bin" / "aws"


def throughput(work: Path, size: int, rounds: int) -> dict[str, Any]:
    manifest = release(work / "tp", dict.fromkeys(CELLS, size))
    files = sorted((work / "tp" / "dist").glob("*.whl"))
    total = sum(f.stat().st_size for f in files)
    upload = work / "tp" / "aws"
    upload.mkdir()
    for f in files:
        os.link(f, upload / f.name)
    aws = aws_cli(work)
    rows: list[dict[str, Any]] = []
    with lean_moto(work, "moto-tp") as url:
        s3 = client(url)
        for r in range(rounds):
            order = ("aws", "transfer", "publish")
            for who in order if r % 2 == 0 else order[::-1]:
                bucket = f"{who}-{r}"
                s3.create_bucket(Bucket=bucket)
                if who == "aws":
                    argv = [str(aws), "s3", "cp", str(upload), f"s3://{bucket}/dl/",
                            "--recursive", "--endpoint-url", url, "--only-show-errors"]  # fmt: skip
                    ran = timed(argv, work, "aws s3 cp --recursive")
                elif who == "transfer":
                    argv = [sys.executable, __file__, "--put", url, bucket, *map(str, files)]
                    ran = timed(argv, work, "S3Store.put_if_absent x 4")
                else:
                    matrix = work / f"tp-{r}.yaml"
                    matrix.write_text(
                        matrix_text(
                            f"publishing:\n  store: s3://{bucket}/dl\n  s3_endpoint_url: {url}\n"
                        ),
                        encoding="utf-8",
                    )
                    argv = ["publish", str(matrix), "--channel", "test", "--manifest"]
                    ran = relforge([*argv, str(manifest), "--no-index", "--execute"], work)
                rows.append({"who": who, "round": r, "seconds": round(ran.seconds, 1),
                             "mib_per_s": round(total / MIB / ran.seconds, 1), "exit": ran.exit,
                             "cpu_seconds": ran.cpu_seconds,
                             "peak_rss_mib": ran.peak_rss_mib})  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                    for obj in page.get("Contents", ()):  # free moto's files
                        s3.delete_object(Bucket=bucket, Key=obj["Key"])

    def median(who: str) -> float:
        return statistics.median(float(r["mib_per_s"]) for r in rows if r["who"] == who)

    theirs, moved, published = median("aws"), median("transfer"), median("publish")
    return {
        "files": len(files),
        "bytes": total,
        "rounds": rows,
        "aws_mib_per_s": theirs,
        "transfer_mib_per_s": moved,
        "publish_mib_per_s": published,
        "transfer_ratio": round(moved / theirs, 2),
        "publish_ratio": round(published / theirs, 2),
        "target": "relforge >= 1.0 x aws s3 cp (medians)",
        "met_by_transfer": moved >= theirs,
        "met_by_publish": published >= theirs,
        "all_succeeded": all(r["exit"] == 0 for r in rows),
    }


def resume(work: Path, size: int) -> dict[str, Any]:
    manifest = release(work / "rs", {**dict.fromkeys(CELLS, 0), BIG_CELL: size})
    (wheel,) = (work / "rs" / "dist").glob("rfdemo-1.0.0+cu128-*.whl")
    runs = []
    with (
        lean_moto(work, "moto-rs") as url,
        FaultProxy(upstream=url, seed=1, rate=0.0, max_request=CEILING) as proxy,
    ):
        s3 = client(url)
        s3.create_bucket(Bucket="bench-rs")
        matrix = work / "rs.yaml"
        matrix.write_text(
            matrix_text(
                f"publishing:\n  store: s3://bench-rs/dl\n  s3_endpoint_url: {proxy.url}\n"
            ),
            encoding="utf-8",
        )
        argv = ["publish", str(matrix), "--channel", "test", "--manifest", str(manifest)]
        env = {**os.environ, **ENV}
        with (work / "relforge.log").open("ab") as log:
            killed = subprocess.Popen(
                [sys.executable, "-m", "relforge", *argv, "--execute"],
                cwd=work, env=env, stdout=log, stderr=log,
            )  # fmt: skip
            high = 0
            while proxy.sent["UploadPart"] < wheel.stat().st_size // 2 and killed.poll() is None:
                high = max(high, vm_hwm(killed.pid))
                time.sleep(0.05)
            high = max(high, vm_hwm(killed.pid))  # its peak so far (the kernel's high-water mark)
            killed.send_signal(signal.SIGKILL)
            killed.wait()
        sent_before = proxy.sent["UploadPart"]
        time.sleep(2)  # the proxy finishes forwarding the parts it had read whole
        (upload,) = s3.list_multipart_uploads(Bucket="bench-rs")["Uploads"]
        parts = s3.list_parts(Bucket="bench-rs", Key=upload["Key"], UploadId=upload["UploadId"])
        landed = sum(p["Size"] for p in parts.get("Parts", ()))
        missing = wheel.stat().st_size - landed
        runs.append({"argv": "publish (killed)", "peak_rss_mib": round(high / 1024, 1)})
        sent = proxy.sent["UploadPart"]
        rerun = relforge([*argv, "--execute"], work)
        resent = proxy.sent["UploadPart"] - sent
        left = len(s3.list_multipart_uploads(Bucket="bench-rs").get("Uploads", []))
        head = s3.head_object(Bucket="bench-rs", Key=upload["Key"])
    return {
        "artifact_bytes": wheel.stat().st_size,
        "sent_before_kill_bytes": sent_before,
        "landed_bytes": landed,
        "missing_bytes": missing,
        "resent_bytes": resent,
        "ratio": round(resent / missing, 3),
        "target": "resent <= 1.10 x missing",
        "met": resent <= 1.10 * missing and rerun.exit == 0,
        "rerun": asdict(rerun),
        "killed": runs[0],
        "uploads_left_open": left,
        "object_sha256_ok": head["Metadata"].get("sha256") == manifest_sha(manifest, BIG_CELL),
    }


def manifest_sha(manifest: Path, cell_id: str) -> str:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return str(data["entries"][cell_id]["sha256"])


def peak(report: dict[str, Any]) -> float:
    """The largest peak RSS of any relforge process in the report."""
    found: list[float] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "peak_rss_mib" in node and node.get("who") != "aws" and "ref" not in node:
                # relforge's processes only (not awscli's, not the baseline's)
                found.append(float(node["peak_rss_mib"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(report)
    return max(found, default=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-gib", type=float, default=6)
    parser.add_argument("--throughput-gib", type=float, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--resume-gib", type=float, default=2)
    parser.add_argument("--only", default="big,throughput,resume")
    parser.add_argument("--baseline-ref", default="98e3e3b", help="relforge before multipart")
    parser.add_argument("--workdir", default="/tmp", help="where the large files go")
    parser.add_argument("--put", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.put:
        put_files(args.put[0], args.put[1], args.put[2:])
        return 0
    os.environ.update(ENV)
    report: dict[str, Any] = {
        "benchmark": "release-size artifacts on S3: multipart, parallel, resumable (issue 26)",
        "moto": "moto 5.2.5 with benchmarks/lean_moto.py (large objects read from files)",
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, shared 2-core (noisy: other work runs beside it)",
    }
    path = ROOT / "benchmarks" / "results" / "multipart.json"
    if path.exists():  # a partial run (--only) keeps the other sections' figures
        report = {**json.loads(path.read_text(encoding="utf-8")), **report}
    with tempfile.TemporaryDirectory(prefix="relforge-bench-mp-", dir=args.workdir) as tmp:
        work = Path(tmp)
        wanted = args.only.split(",")
        if "resume" in wanted:
            report["resume"] = resume(work, int(args.resume_gib * GIB))
        if "throughput" in wanted:
            report["throughput"] = throughput(work, int(args.throughput_gib * GIB), args.rounds)
        if "big" in wanted:
            report["big"] = big(work, int(args.big_gib * GIB), args.baseline_ref)
    report["peak_rss_mib"] = peak({k: report.get(k) for k in ("big", "throughput", "resume")})
    report["rss_target_mib"] = 300
    report["rss_met"] = report["peak_rss_mib"] <= 300
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"→ {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
