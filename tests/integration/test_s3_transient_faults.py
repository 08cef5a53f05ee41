"""publish, promote and index through a proxy that makes 10% of S3 requests fail the way a real
service does (503 SlowDown, 500 before or after the write landed, 400 RequestTimeout, resets,
bodies cut mid-stream, a byte flipped on the wire): every run completes, the stores end up
byte-identical to a fault-free run, and every injected fault is counted as one retry."""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Result
from tests.faultproxy import FaultProxy
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects, page_files, without_pages
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
RATE = 0.1


def _matrix(tmp_path: Path, s3: S3, bucket: str, endpoint: str) -> Path:
    client = s3.client()
    for name in (bucket, f"{bucket}-backup"):
        client.create_bucket(Bucket=name)
    publishing = textwrap.dedent(f"""\
        publishing:
          store: s3://{bucket}/dl
          s3_endpoint_url: {endpoint}
          backup_store: s3://{bucket}-backup/tags
        """)
    path = tmp_path / f"{bucket}.yaml"
    path.write_text(matrix_text(publishing), encoding="utf-8")
    return path


def _flow(run: Callable[..., Result], matrix: Path, manifest: Path) -> tuple[int, list[str]]:
    """publish → promote → index of both channels; returns the retries the summaries report
    and each command's summary line (publish's is followed by the install lines)."""
    commands = [
        ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest)),
        ("promote", str(matrix), "--version", "1.0.0"),
        ("index", str(matrix), "--channel", "release"),
        ("index", str(matrix), "--channel", "test"),
    ]
    retries = 0
    lines = []
    for argv in commands:
        done = run(*argv, "--execute")
        assert done.code == 0, done.out + done.err
        assert "Traceback" not in done.err
        [summary] = [x for x in done.out.splitlines() if re.search(r"; retries: \d+$", x)]
        found = re.search(r"retries: (\d+)$", summary)
        assert found, summary
        retries += int(found.group(1))
        lines.append(summary)
    return retries, lines


def _pages(s3: S3, bucket: str) -> dict[str, object]:
    """Each page's file list, keyed without the bucket's own prefix."""
    return page_files(s3, bucket)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One release for every test of the module: the fault-free baseline is made from it once."""
    work = tmp_path_factory.mktemp("work")
    path = work / "relforge-manifest.json"
    write_manifest(path, release_wheels(work))
    return path


@pytest.fixture(autouse=True)
def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # each test's journal (.relforge/) is its own


@dataclass(frozen=True, kw_only=True)
class Clean:
    """What the fault-free flow leaves: the store without its pages, the files each page lists,
    and the backup store."""

    objects: dict[str, tuple[str, str]]
    pages: dict[str, object]
    backup: dict[str, tuple[str, str]]


class Baseline:
    """The fault-free flow of the module's release, run once (by the first test that asks, on
    its own bucket and with its own `run`) and compared with by every faulted flow."""

    def __init__(self) -> None:
        self._clean: Clean | None = None

    def get(self, run: Callable[..., Result], tmp_path: Path, s3: S3, manifest: Path) -> Clean:
        if self._clean is None:
            bucket = f"{s3.bucket}-clean"
            matrix = _matrix(tmp_path, s3, bucket, s3.endpoint)
            assert _flow(run, matrix, manifest)[0] == 0  # no proxy, no fault, no retry
            self._clean = Clean(
                objects=without_pages(objects(s3, bucket)),
                pages=_pages(s3, bucket),
                backup=objects(s3, f"{bucket}-backup"),
            )
        return self._clean


@pytest.fixture(scope="module")
def baseline() -> Baseline:
    return Baseline()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ten_percent_faults_complete_with_nothing_lost(
    seed: int,
    tmp_path: Path,
    s3: S3,
    manifest: Path,
    baseline: Baseline,
    run: Callable[..., Result],
) -> None:
    clean = baseline.get(run, tmp_path, s3, manifest)
    with FaultProxy(upstream=s3.endpoint, seed=seed, rate=RATE) as proxy:
        faulted = _matrix(tmp_path, s3, f"{s3.bucket}-faulted", proxy.url)
        retries, _lines = _flow(run, faulted, manifest)
        assert proxy.total > 0 and len(proxy.injected) >= 3, proxy.injected
        # each fault was noticed (nothing slipped through as a success) and retried once
        assert retries == proxy.total, (retries, proxy.injected)
        # a rerun finds everything in place, through the faults still
        _retries, again = _flow(run, faulted, manifest)
        assert "everything was already in place" in again[0]
        assert "everything was already in place" in again[1]
    # the same objects; the pages list the same files (each page set has its own generation)
    faulted_objects = objects(s3, f"{s3.bucket}-faulted")
    assert without_pages(faulted_objects) == clean.objects
    assert _pages(s3, f"{s3.bucket}-faulted") == clean.pages
    assert objects(s3, f"{s3.bucket}-faulted-backup") == clean.backup
    assert len(faulted_objects) > 20


def test_bytes_that_never_match_their_stored_sha256_are_refused_not_retried_forever(
    s3: S3, tmp_path: Path
) -> None:
    """A retry heals the wire, not the store: an object changed outside relforge (its stored
    sha256 no longer matches) is refused after the bounded tries, by every read."""
    from relforge.errors import RefusedError
    from relforge.stores.retry import RetryPolicy
    from relforge.stores.s3 import S3Store

    client: Any = s3.client()
    data = b"the validated bytes"
    claimed = hashlib.sha256(b"other bytes").hexdigest()
    client.put_object(Bucket=s3.bucket, Key="dl/x.whl", Body=data, Metadata={"sha256": claimed})
    store = S3Store(
        bucket=s3.bucket,
        prefix="dl",
        endpoint_url=s3.endpoint,
        policy=RetryPolicy(attempts=3, base=0.01),
    )
    for read in (store.get, store.sha256, lambda key: store.download(key, tmp_path / "x.whl")):
        with pytest.raises(RefusedError, match="changed outside relforge"):
            read("x.whl")
    assert store.retries == 3 * 2  # two retries per read, then the refusal
