"""Each kind of S3 fault on its own, at twice the rate (20%), so some requests fail several
times in a row: publish, promote and index still complete, every fault is counted as one retry,
and the stores end up as after a fault-free run.  (Its own file so that it runs beside
test_s3_transient_faults.py under pytest-xdist, which keeps a file on one worker.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.faultproxy import KINDS, FaultProxy
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects, without_pages
from tests.integration.test_s3_transient_faults import (  # fixtures too: one module's worth
    Baseline,
    _flow,
    _matrix,
    _pages,
    _workdir,
    baseline,
    manifest,
)

pytestmark = pytest.mark.slow
__all__ = ["_workdir", "baseline", "manifest"]  # fixtures this module uses by name


def test_every_fault_kind_is_survived_on_its_own(
    tmp_path: Path, s3: S3, manifest: Path, baseline: Baseline, run: Callable[..., Result]
) -> None:
    """One kind at a time, at twice the rate (20%), so some requests fail several times in a row."""
    clean = baseline.get(run, tmp_path, s3, manifest)
    expected, expected_pages = clean.objects, clean.pages
    for number, kind in enumerate(KINDS):
        bucket = f"{s3.bucket}-k{number}"
        with FaultProxy(upstream=s3.endpoint, seed=7, rate=0.2, kinds=(kind,)) as proxy:
            retries, _lines = _flow(run, _matrix(tmp_path, s3, bucket, proxy.url), manifest)
        assert proxy.injected[kind] > 0, kind
        assert retries == proxy.total, (kind, retries, proxy.injected)
        assert without_pages(objects(s3, bucket)) == expected, kind
        assert _pages(s3, bucket) == expected_pages, kind
