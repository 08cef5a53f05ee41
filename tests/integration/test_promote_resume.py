"""A promotion killed with SIGKILL part-way resumes, on rerun, to the same end state as an
uninterrupted one, with every hash verified."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import (
    objects,
    page_files,
    s3_matrix,
    without_pages,
)
from tests.pacedcli import KILLED_LEASE, TOOK_OVER, paced_relforge
from tests.promote_kit import release_wheels, write_manifest

pytestmark = pytest.mark.slow
RELFORGE = [sys.executable, "-m", "relforge"]


def done_lines(journal_dir: Path) -> int:
    return sum(
        1
        for path in journal_dir.glob("promote-*.jsonl")
        for line in path.read_text().splitlines()
        if '"done"' in line
    )


def test_killed_promotion_resumes_to_the_same_end_state(
    tmp_path: Path, s3: S3, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    matrix = s3_matrix(tmp_path, s3)
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_manifest(manifest, release_wheels(tmp_path / "work"))
    assert (
        run(
            "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
        ).code
        == 0
    )
    published = objects(s3)

    args = ["promote", str(matrix), "--version", "1.0.0", "--execute", "--workers", "1"]
    argv = [*RELFORGE, *args]
    proc = subprocess.Popen(
        [*paced_relforge(transfer_delay=0.3), *args, *KILLED_LEASE],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    journal_dir = tmp_path / ".relforge" / "journal"
    deadline = time.monotonic() + 60
    while done_lines(journal_dir) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the promotion finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    interrupted = done_lines(journal_dir)
    assert 3 <= interrupted < 13  # 6 copies + 6 backups + the manifest

    resumed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert TOOK_OVER in resumed.stderr, resumed.stderr  # the killed run's lease, once it expired
    assert "resuming" in resumed.stdout and f"{interrupted} action(s) done" in resumed.stdout

    after = objects(s3)
    backups = objects(s3, f"{s3.bucket}-backup")
    for key, (sha, claimed) in after.items():
        assert sha == claimed, key  # every object's bytes match its recorded sha256
    for key, value in published.items():
        if "/whl/test/" in key and key.endswith((".whl", ".metadata")):
            release_key = key.replace("/whl/test/", "/whl/")
            assert after[release_key] == value
            assert backups[f"tags/rfdemo/1.0.0/{release_key.removeprefix('dl/')}"] == value
    assert len(backups) == 6
    assert any(k.startswith("dl/relforge/manifests/release/") for k in after)
    page = json.loads(
        s3.client()
        .get_object(Bucket=s3.bucket, Key="dl/whl/cu128/rfdemo/index.json")["Body"]
        .read()
    )
    assert [f["filename"] for f in page["files"]] == [
        "rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"
    ]

    # an uninterrupted promotion of the same artifacts into a fresh store ends the same way
    fresh = S3(s3.endpoint, f"{s3.bucket}-fresh")
    fresh.create_public_bucket(fresh.bucket)
    for key, _ in published.items():
        data = s3.client().get_object(Bucket=s3.bucket, Key=key)["Body"].read()
        meta = s3.client().head_object(Bucket=s3.bucket, Key=key)["Metadata"]
        fresh.client().put_object(Bucket=fresh.bucket, Key=key, Body=data, Metadata=meta)
    fresh_matrix = tmp_path / "fresh.yaml"
    fresh_matrix.write_text(matrix.read_text().replace(s3.bucket, fresh.bucket))
    fresh.create_public_bucket(f"{fresh.bucket}-backup")
    clean = run("promote", str(fresh_matrix), "--version", "1.0.0", "--execute")
    assert clean.code == 0, clean.err
    # the same objects; pages list the same files (each page set has its own generation id)
    assert without_pages(objects(fresh)) == without_pages(after)
    assert page_files(fresh) == page_files(s3)
    assert objects(fresh, f"{fresh.bucket}-backup") == backups
    rerun = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert rerun.returncode == 0 and "everything was already in place" in rerun.stdout
