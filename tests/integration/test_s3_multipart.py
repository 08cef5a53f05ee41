"""Release-size artifacts on S3: moto behind a proxy that refuses, as AWS does, any single PUT or
copy over a ceiling (scaled down to 16 MiB here, 5 GiB on AWS), with a wheel of 24 MiB and
multipart settings scaled to match (threshold 8 MiB, parts of 5 MiB, 4 in flight).

Uploads, server-side copies and copies to another endpoint go in parts and land byte for byte;
with the multipart settings out of reach the proxy refuses them (so the successes prove parts
were used); a publish killed with parts in flight resends only the parts the service lacks;
uploads left open are named by `verify` and aborted by its repair; transient faults inside parts
are retried like every other request.
"""

from __future__ import annotations

import hashlib
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.errors import RefusedError
from relforge.stores.parts import Part, TransferSettings
from relforge.stores.resume import UploadBook
from relforge.stores.s3 import S3Store
from relforge.stores.s3_multipart import upload
from tests.conftest import Result
from tests.faultproxy import FaultProxy
from tests.integration.conftest import S3
from tests.integration.test_promote_flow import objects
from tests.pacedcli import KILLED_LEASE, TOOK_OVER
from tests.promote_kit import matrix_text, padded_wheel, release_wheels, write_manifest

pytestmark = pytest.mark.slow
MIB = 1 << 20
LIMIT = 16 * MIB  # the proxy's single-request ceiling
BIG = 24 * MIB + 4321  # the padded linux cu128 wheel: 5 parts of 5 MiB
PARTS = 5
SCALED = (
    "  s3_multipart_threshold_mb: 8\n"
    "  s3_part_size_mb: 5\n"
    "  s3_part_concurrency: 4\n"
    "  s3_copy_threshold_mb: 8\n"
)
PARTS_OPS = (
    "CreateMultipartUpload",
    "UploadPart",
    "UploadPartCopy",
    "ListParts",
    "CompleteMultipartUpload",
    "GetObjectRange",
)
BIG_KEY = "whl/test/cu128/rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("work")
    wheels = release_wheels(work)
    padded_wheel(wheels["wheel-linux-x86_64-py3.11-cu128"], BIG - 3000)
    path = work / "relforge-manifest.json"
    write_manifest(path, wheels)
    return path


@pytest.fixture(autouse=True)
def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # each test's journal (.relforge/) is its own


def _big_sha(manifest: Path) -> str:
    (wheel,) = manifest.parent.glob("**/rfdemo-1.0.0+cu128-*.whl")
    assert wheel.stat().st_size > LIMIT
    return hashlib.sha256(wheel.read_bytes()).hexdigest()


def _matrix(
    tmp_path: Path,
    s3: S3,
    bucket: str,
    endpoint: str,
    *,
    settings: str = SCALED,
    mirror: str | None = None,
) -> Path:
    client = s3.client()
    for name in (bucket, f"{bucket}-backup", f"{bucket}-far"):
        client.create_bucket(Bucket=name)
    mirrors = (
        f"  mirrors:\n    - {{name: far, url: 's3://{bucket}-far/dl', endpoint_url: '{mirror}'}}\n"
        if mirror
        else ""
    )
    publishing = (
        "publishing:\n"
        f"  store: s3://{bucket}/dl\n"
        f"  s3_endpoint_url: {endpoint}\n"
        f"  backup_store: s3://{bucket}-backup/tags\n" + settings + mirrors
    )
    text = matrix_text(publishing).replace("size_limit_mb: 5", "size_limit_mb: 100")
    path = tmp_path / f"{bucket}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _open_uploads(s3: S3, bucket: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (
        s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    )
    return found


def _publish(run: Callable[..., Result], matrix: Path, manifest: Path) -> Result:
    return run(
        "publish", str(matrix), "--channel", "test", "--manifest", str(manifest), "--execute"
    )


def _ok(done: Result) -> None:
    assert done.code == 0, done.out + done.err
    assert "Traceback" not in done.err


def test_publish_sends_a_large_artifact_in_parts_below_the_request_limit(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        matrix = _matrix(tmp_path, s3, f"{s3.bucket}-up", proxy.url)
        _ok(_publish(run, matrix, manifest))
        assert proxy.refused == {}, proxy.refused
        assert proxy.operations["UploadPart"] == PARTS
        assert proxy.sent["UploadPart"] == BIG - 3000 + _padding(manifest)
        _ok(run("verify", str(matrix), "--channel", "test"))
    stored = objects(s3, f"{s3.bucket}-up")[f"dl/{BIG_KEY}"]
    assert stored == (_big_sha(manifest), _big_sha(manifest))
    head = s3.client().head_object(Bucket=f"{s3.bucket}-up", Key=f"dl/{BIG_KEY}")
    assert head["ETag"].endswith(f'-{PARTS}"')  # a multipart object
    assert _open_uploads(s3, f"{s3.bucket}-up") == []
    assert not list(Path(".relforge/journal/multipart").glob("*.json"))  # no upload left open


def _padding(manifest: Path) -> int:
    """The bytes the wheel has beyond its random blob (zip headers, METADATA, RECORD…)."""
    (wheel,) = manifest.parent.glob("**/rfdemo-1.0.0+cu128-*.whl")
    return wheel.stat().st_size - (BIG - 3000)


def test_without_parts_the_proxy_refuses_the_upload_like_s3(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    """The control: with the threshold above the ceiling, the single PUT is refused (exit 6,
    naming the setting), so the test above passed because the parts were small."""
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        settings = SCALED.replace("threshold_mb: 8", "threshold_mb: 64")
        matrix = _matrix(tmp_path, s3, f"{s3.bucket}-one", proxy.url, settings=settings)
        done = _publish(run, matrix, manifest)
        assert proxy.refused == {"PutObject": 1}
    assert done.code == 6, done.out + done.err
    assert "EntityTooLarge" in done.err and "publishing.s3_multipart_threshold_mb" in done.err
    assert "Traceback" not in done.err
    assert f"dl/{BIG_KEY}" not in objects(s3, f"{s3.bucket}-one")


def test_promote_copies_a_large_artifact_part_by_part_server_side(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        matrix = _matrix(tmp_path, s3, f"{s3.bucket}-cp", proxy.url)
        _ok(_publish(run, matrix, manifest))
        before = proxy.operations.copy()
        _ok(run("promote", str(matrix), "--version", "1.0.0", "--execute"))
        # the release copy and the backup, 5 parts each, none through this process
        assert proxy.operations["UploadPartCopy"] - before["UploadPartCopy"] == 2 * PARTS
        assert proxy.operations["UploadPart"] == before["UploadPart"]
        assert proxy.refused == {}
        _ok(run("verify", str(matrix), "--channel", "release"))
    sha = _big_sha(manifest)
    release_key = "dl/" + BIG_KEY.replace("whl/test/", "whl/")
    assert objects(s3, f"{s3.bucket}-cp")[release_key] == (sha, sha)
    backups = objects(s3, f"{s3.bucket}-cp-backup")
    filename = BIG_KEY.rsplit("/", 1)[1]
    assert [v for k, v in backups.items() if k.endswith(filename)] == [(sha, sha)]
    assert _open_uploads(s3, f"{s3.bucket}-cp") == []


def test_a_single_copy_over_the_limit_is_refused_like_s3(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    """The control for copies: moto copies any size in one CopyObject; the proxy does not."""
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        settings = SCALED.replace("copy_threshold_mb: 8", "copy_threshold_mb: 5120")
        matrix = _matrix(tmp_path, s3, f"{s3.bucket}-cp1", proxy.url, settings=settings)
        _ok(_publish(run, matrix, manifest))
        done = run("promote", str(matrix), "--version", "1.0.0", "--execute")
        assert proxy.refused["CopyObject"] >= 1
    assert done.code == 6, done.out + done.err
    assert "InvalidRequest" in done.err and "publishing.s3_copy_threshold_mb" in done.err


def test_a_mirror_on_another_endpoint_gets_the_parts_streamed(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    """Promote copies the main store's object to the mirror on another endpoint: ranged reads
    of the source, parts sent to the mirror; no whole-object read, no single large PUT."""
    with (
        FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as main,
        FaultProxy(upstream=s3.endpoint, seed=2, rate=0.0, max_request=LIMIT) as far,
    ):
        bucket = f"{s3.bucket}-mr"
        matrix = _matrix(tmp_path, s3, bucket, main.url, mirror=far.url)
        _ok(_publish(run, matrix, manifest))
        ranged, parts = main.operations["GetObjectRange"], far.operations["UploadPart"]
        _ok(run("promote", str(matrix), "--version", "1.0.0", "--execute"))
        assert far.operations["UploadPart"] - parts == PARTS  # the release copy, streamed
        assert main.operations["GetObjectRange"] - ranged >= PARTS
        assert main.refused == {} and far.refused == {}
        _ok(run("verify", str(matrix), "--channel", "release"))
        _ok(run("verify", str(matrix), "--channel", "test"))
    sha = _big_sha(manifest)
    far_objects = objects(s3, f"{bucket}-far")
    assert far_objects["dl/" + BIG_KEY.replace("whl/test/", "whl/")] == (sha, sha)
    assert far_objects[f"dl/{BIG_KEY}"] == (sha, sha)
    assert _open_uploads(s3, f"{bucket}-far") == [] and _open_uploads(s3, bucket) == []


def test_a_killed_publish_resends_only_the_missing_parts(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        bucket = f"{s3.bucket}-kill"
        matrix = _matrix(tmp_path, s3, bucket, proxy.url)
        proxy.hold("UploadPart", after=2)  # two parts land, the others hang in flight
        argv = [sys.executable, "-m", "relforge", "publish", str(matrix), "--channel", "test"]
        killed = subprocess.Popen(
            [*argv, "--manifest", str(manifest), "--execute", *KILLED_LEASE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while proxy.operations["UploadPart"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.operations["UploadPart"] >= 3, proxy.operations
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        proxy.drop_held()
        assert len(_open_uploads(s3, bucket)) == 1
        assert len(list(Path(".relforge/journal/multipart").glob("*.json"))) == 1
        sent, count = proxy.sent["UploadPart"], proxy.operations["UploadPart"]
        done = _publish(run, matrix, manifest)
        _ok(done)
        assert TOOK_OVER in done.err, done.err  # the killed run's lease, once it expired
        assert proxy.operations["UploadPart"] - count == PARTS - 2
        assert proxy.sent["UploadPart"] - sent == BIG - 3000 + _padding(manifest) - 2 * 5 * MIB
    sha = _big_sha(manifest)
    assert objects(s3, bucket)[f"dl/{BIG_KEY}"] == (sha, sha)
    assert _open_uploads(s3, bucket) == []
    assert not list(Path(".relforge/journal/multipart").glob("*.json"))


def test_a_killed_promote_resumes_its_part_copies(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    """Killed with the release copy's first two parts copied: the rerun copies the other three,
    then the backup's five; the copy is read back like any other."""
    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0, max_request=LIMIT) as proxy:
        bucket = f"{s3.bucket}-kcp"
        matrix = _matrix(tmp_path, s3, bucket, proxy.url)
        _ok(_publish(run, matrix, manifest))
        proxy.hold("UploadPartCopy", after=2)
        promote = ["promote", str(matrix), "--version", "1.0.0", "--execute"]
        killed = subprocess.Popen(
            [sys.executable, "-m", "relforge", *promote, *KILLED_LEASE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while proxy.operations["UploadPartCopy"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        proxy.drop_held()
        assert proxy.operations["UploadPartCopy"] >= 3, proxy.operations
        count = proxy.operations["UploadPartCopy"]
        resumed = run(*promote)
        _ok(resumed)
        assert TOOK_OVER in resumed.err, resumed.err  # the killed run's lease, once it expired
        assert proxy.operations["UploadPartCopy"] - count == 2 * PARTS - 2
    sha = _big_sha(manifest)
    assert objects(s3, bucket)["dl/" + BIG_KEY.replace("whl/test/", "whl/")] == (sha, sha)
    assert _open_uploads(s3, bucket) == [] and _open_uploads(s3, f"{bucket}-backup") == []


def test_verify_names_uploads_left_open_and_repair_aborts_them(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    bucket = f"{s3.bucket}-left"
    matrix = _matrix(tmp_path, s3, bucket, s3.endpoint)
    _ok(_publish(run, matrix, manifest))
    client = s3.client()
    client.create_multipart_upload(Bucket=bucket, Key=f"dl/{BIG_KEY}")  # left behind
    other = "dl/whl/test/cu128/rfdemo-1.0.1+cu128-py3-none-manylinux_2_28_x86_64.whl"
    client.create_multipart_upload(Bucket=bucket, Key=other)  # an interrupted upload
    client.create_multipart_upload(Bucket=bucket, Key="elsewhere/x.whl")  # not the channel's
    done = run("verify", str(matrix), "--channel", "test", "--format", "json")
    assert done.code == 4, done.out + done.err
    import json

    report = json.loads(done.out)
    found = {f["key"]: f["message"] for f in report["findings"] if f["kind"] == "unfinished"}
    assert set(found) == {BIG_KEY, other.removeprefix("dl/")}, report["findings"]
    assert "can never complete" in found[BIG_KEY]
    assert "resume" in found[other.removeprefix("dl/")]
    assert len(report["findings"]) == 2
    _ok(run("verify", str(matrix), "--channel", "test", "--repair", "--execute"))
    assert [u["Key"] for u in _open_uploads(s3, bucket)] == ["elsewhere/x.whl"]
    _ok(run("verify", str(matrix), "--channel", "test"))


def test_faults_inside_parts_are_retried_and_nothing_is_lost(
    tmp_path: Path, s3: S3, manifest: Path, run: Callable[..., Result]
) -> None:
    """30% of the multipart requests fail (503, 500 before and after the service acted, resets,
    cut and flipped bodies) on both endpoints while a release goes up in parts, is copied part
    by part and streamed to the mirror: everything completes and every object is the
    manifest's."""
    bucket = f"{s3.bucket}-flt"
    with (
        FaultProxy(
            upstream=s3.endpoint, seed=11, rate=0.3, max_request=LIMIT, only=PARTS_OPS
        ) as main,
        FaultProxy(
            upstream=s3.endpoint, seed=12, rate=0.3, max_request=LIMIT, only=PARTS_OPS
        ) as far,
    ):
        settings = SCALED + "  s3_attempts: 12\n"
        matrix = _matrix(tmp_path, s3, bucket, main.url, mirror=far.url, settings=settings)
        for argv in (
            ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest)),
            ("promote", str(matrix), "--version", "1.0.0"),
            ("index", str(matrix), "--channel", "release"),
        ):
            _ok(run(*argv, "--execute"))
        hit = main.faulted + far.faulted
        assert hit["UploadPart"] > 0 and hit["GetObjectRange"] > 0, hit
        assert main.refused == {} and far.refused == {}
    clean = tmp_path / "direct.yaml"  # verify reads without faults
    text = matrix.read_text(encoding="utf-8")
    clean.write_text(text.replace(main.url, s3.endpoint).replace(far.url, s3.endpoint))
    _ok(run("verify", str(clean), "--channel", "test"))
    _ok(run("verify", str(clean), "--channel", "release"))
    sha = _big_sha(manifest)
    for name in (bucket, f"{bucket}-far"):
        found = objects(s3, name)
        assert found[f"dl/{BIG_KEY}"] == (sha, sha)
        assert found["dl/" + BIG_KEY.replace("whl/test/", "whl/")] == (sha, sha)
        assert _open_uploads(s3, name) == []


def _store(s3: S3, tmp_path: Path, endpoint: str | None = None) -> S3Store:
    s3.client().create_bucket(Bucket=f"{s3.bucket}-st")
    return S3Store(
        bucket=f"{s3.bucket}-st",
        endpoint_url=endpoint or s3.endpoint,
        settings=TransferSettings(multipart_threshold=6 * MIB, part_size=5 * MIB, concurrency=3),
        book=UploadBook(tmp_path / "book"),
    )


def test_a_pass_whose_bytes_changed_on_the_way_is_read_again_and_only_that_part_resent(
    s3: S3, tmp_path: Path
) -> None:
    """A stream (a copy from another endpoint) whose second part arrives with a byte changed the
    first time: the whole sha256 disagrees, the second pass reads every part again and sends
    only the part whose bytes changed; the object is the expected one."""
    data = random.Random(5).randbytes(17 * MIB)
    reads: Counter[int] = Counter()

    def fetch(part: Part, into: memoryview) -> None:
        reads[part.number] += 1
        into[:] = data[part.start : part.start + part.length]
        if part.number == 2 and reads[2] == 1:
            into[100] ^= 0x5A  # a flipped byte, as a faulty wire delivers it

    with FaultProxy(upstream=s3.endpoint, seed=1, rate=0.0) as proxy:
        store = _store(s3, tmp_path, proxy.url)
        sha = hashlib.sha256(data).hexdigest()
        assert upload(
            store, "x/flip.bin", size=len(data), fetch=fetch, sha256=sha,
            content_type="application/octet-stream", passes=3, source="the source",
        )  # fmt: skip
        assert reads == {1: 2, 2: 2, 3: 2, 4: 2}  # two passes over the 4 parts
        assert proxy.operations["UploadPart"] == 4 + 1  # part 2 once more, nothing else
    assert store.read_sha256("x/flip.bin", None) == sha
    assert _open_uploads(s3, f"{s3.bucket}-st") == []


def test_bytes_that_never_hash_right_are_refused_and_nothing_is_written(
    s3: S3, tmp_path: Path
) -> None:
    """A local file that is not the manifest's bytes (changed after it was hashed): refused
    before completion — no object, no upload left open, no record."""
    store = _store(s3, tmp_path)
    path = tmp_path / "big.bin"
    path.write_bytes(random.Random(6).randbytes(12 * MIB))
    with pytest.raises(RefusedError, match="nothing was written") as refused:
        store.put_if_absent("x/changed.bin", path, "0" * 64)
    assert "changed after it was hashed" in str(refused.value.hint)
    assert store.head("x/changed.bin") is None
    assert _open_uploads(s3, f"{s3.bucket}-st") == []
    assert list((tmp_path / "book").glob("*.json")) == []
