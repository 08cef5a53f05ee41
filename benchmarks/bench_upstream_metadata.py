"""Benchmark: the METADATA of a large real wheel as `relforge upstream check` reads it when the
index offers no PEP 658 file — HTTP range requests into the zip — side by side with downloading
the whole wheel (what reading it without ranges would take) and with the PEP 658 file.

The wheel (torch 2.14.1, CUDA, 555 MB, from /opt/pypi-more/files) is served from disk by the
tests' local index over HTTP on 127.0.0.1, so the figures are bytes and requests, and seconds
without a network in between.  Writes benchmarks/results/upstream_metadata.json.
"""

from __future__ import annotations

import json
import platform
import sys
import time
import zipfile
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.upstream_index import IndexFile, LocalIndex, serve_index  # noqa: E402

from relforge.simplepages import PageFile  # noqa: E402
from relforge.upstream.index import UpstreamIndex  # noqa: E402
from relforge.upstream.metadata import RangeFile, read_metadata  # noqa: E402

WHEEL = Path("/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")
RUNS = 3


def metadata_of(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return zf.read(name)


def page_file(index: LocalIndex, *, metadata: bool) -> PageFile:
    url = index.url.replace("/simple/", f"/files/{WHEEL.name}")
    return PageFile(
        filename=WHEEL.name,
        url=url,
        sha256=None,
        yanked=None,
        metadata=metadata,
        metadata_sha256=None,
        requires_python=None,
    )


def best(seconds: list[float]) -> float:
    return round(min(seconds), 4)


def main() -> None:
    meta = metadata_of(WHEEL)
    index = LocalIndex()
    index.add("torch", IndexFile(WHEEL.name, path=WHEEL, metadata=meta))
    ranged, whole, pep658 = [], [], []
    with serve_index(index):
        reader = UpstreamIndex(index.url)
        for _ in range(RUNS):
            index.served.clear()
            start = time.perf_counter()
            got = read_metadata(reader, page_file(index, metadata=False))
            ranged.append(time.perf_counter() - start)
            assert got.text.encode() == meta and got.via == "range requests"
            range_bytes = index.served[f"/files/{WHEEL.name}"]

            start = time.perf_counter()
            got = read_metadata(reader, page_file(index, metadata=True))
            pep658.append(time.perf_counter() - start)
            assert got.via == "PEP 658"

            index.served.clear()
            start = time.perf_counter()
            with requests.get(page_file(index, metadata=False).url, stream=True, timeout=60) as r:
                size = sum(len(b) for b in r.iter_content(1 << 20))
            whole.append(time.perf_counter() - start)
        remote = RangeFile(reader, page_file(index, metadata=False).url)
        with zipfile.ZipFile(remote) as zf:
            zf.read(next(n for n in zf.namelist() if n.endswith("/METADATA")))
        requests_made = remote.requests
    result = {
        "machine": {"cpus": 2, "python": platform.python_version()},
        "input": {
            "wheel": WHEEL.name,
            "bytes": WHEEL.stat().st_size,
            "members": len(zipfile.ZipFile(WHEEL).namelist()),
        },
        "range_requests": {
            "seconds": best(ranged),
            "bytes": range_bytes,
            "requests": requests_made,
        },
        "pep658_seconds": best(pep658),
        "whole_download": {"seconds": best(whole), "bytes": size},
        "bytes_ratio_whole_to_ranges": round(size / range_bytes),
        "seconds_ratio_whole_to_ranges": round(best(whole) / best(ranged), 1),
    }
    out = ROOT / "benchmarks" / "results" / "upstream_metadata.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
