"""Native archives through publish, promote and verify, on the local store and on S3 (moto):
the archive and its `.sha256` file land under the channel's archive prefix, the stored manifest
vouches for them, reruns change nothing, and every attempt to make relforge ship or bless other
bytes (archive replaced, `.sha256` edited, an archive no manifest knows) is refused or found."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relforge.manifest import (
    ArtifactManifest,
    ManifestEntry,
    Verdict,
    load_manifest,
    sha256_file,
)
from tests.conftest import Result
from tests.integration.conftest import S3
from tests.integration.verify_kit import LocalRaw, Raw, S3Raw, flip
from tests.pacedcli import KILLED_LEASE, TOOK_OVER, paced_relforge
from tests.promote_kit import matrix_text, release_wheels, write_manifest

pytestmark = pytest.mark.slow
Run = Callable[..., Result]
CELL = "libtorch-linux-x86_64-cpu-shared-with-deps-release"
NAME = "rfdemo-linux-x86_64-shared-with-deps-release-1.0.0+cpu.zip"
TEST_KEY = f"libtorch/test/cpu/{NAME}"
RELEASE_KEY = f"libtorch/cpu/{NAME}"
LIBTORCH = textwrap.indent(
    textwrap.dedent("""\
        libtorch:
          platforms: [linux-x86_64]
          accelerators: [cpu]
          variants: [shared-with-deps]
        """),
    "    ",
)
CHANNELS = {
    "prefix: whl/nightly}": "prefix: whl/nightly, libtorch_prefix: libtorch/nightly}",
    "prefix: whl/test}": "prefix: whl/test, libtorch_prefix: libtorch/test}",
    "prefix: whl}": "prefix: whl, libtorch_prefix: libtorch}",
}


def make_archive(folder: Path, version: str = "1.0.0+cpu") -> Path:
    """A libtorch-style zip: one top-level folder with include/, lib/ and build-version."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rfdemo-linux-x86_64-shared-with-deps-release-{version}.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("rfdemo/build-version", f"{version}\n")
        zf.writestr("rfdemo/include/rfdemo/core.h", "int answer();\n")
        zf.writestr("rfdemo/lib/librfdemo.so", b"\x7fELF" + os.urandom(4000))
    return path


def write_archive_manifest(
    path: Path,
    archive: Path,
    *,
    validated: bool = True,
    version: str = "1.0.0+cpu",
    channel: str = "test",
) -> None:
    entry = ManifestEntry(
        cell_id=CELL,
        file=str(archive.relative_to(path.parent)),
        size=archive.stat().st_size,
        sha256=sha256_file(archive),
        version=version,
        package_type="archive",
        variant="cpu",
        upload_subfolder="cpu",
    )
    manifest = ArtifactManifest(project="rfdemo", release="1.0", channel=channel)
    manifest = manifest.with_entries([entry])
    if validated:  # what `relforge validate` records once the archive checks pass
        manifest = manifest.with_verdicts(CELL, [Verdict(check="RF-A001", status="pass")])
    manifest.save(path)


@dataclass(frozen=True, kw_only=True)
class Setup:
    matrix: Path
    manifest: Path
    archive: Path
    raw: Raw  # the main store, around relforge
    backup: Raw
    kind: str

    def meta_sha256(self, key: str) -> str | None:
        """The sha256 the store keeps beside the object (S3 metadata, local stamp)."""
        if isinstance(self.raw, S3Raw):
            head = self.raw.client.head_object(Bucket=self.raw.bucket, Key=self.raw.prefix + key)
            found: str | None = head["Metadata"].get("sha256")
            return found
        assert isinstance(self.raw, LocalRaw)
        stamp = self.raw.root / ".relforge-meta" / f"{key}.json"
        return str(json.loads(stamp.read_text())["sha256"])


def _snapshot(raw: Raw) -> dict[str, bytes]:
    """Every object of the store, by key (without the store's own bookkeeping)."""
    prefix = raw.prefix if isinstance(raw, S3Raw) else ""
    return {
        k.removeprefix(prefix): v
        for k, v in raw.snapshot().items()
        if k.startswith(prefix) and not k.startswith(".relforge-meta/")
    }


def replace(s: Setup, key: str, data: bytes) -> None:
    """An attacker's plain overwrite: a new file on disk (a new inode and mtime), on S3 a PUT
    that keeps the original's sha256 metadata (forged)."""
    if isinstance(s.raw, LocalRaw):
        path = s.raw.root / key
        path.unlink()
        path.write_bytes(data)
    else:
        s.raw.write(key, data)


def _setup(kind: str, tmp_path: Path, s3: S3 | None) -> Setup:
    raw: Raw
    backup: Raw
    if s3 is not None:
        # two tries per request: bytes changed in the store are read once more, then refused
        # (the default 8 tries only wait longer; retries: test_s3_transient_faults)
        publishing = textwrap.dedent(f"""\
            publishing:
              store: s3://{s3.bucket}/dl
              s3_endpoint_url: {s3.endpoint}
              s3_attempts: 2
              backup_store: s3://{s3.bucket}-backup/tags
            """)
        client: Any = s3.client()
        client.create_bucket(Bucket=f"{s3.bucket}-backup")
        raw = S3Raw(client, s3.bucket, "dl")
        backup = S3Raw(client, f"{s3.bucket}-backup", "tags")
    else:
        publishing = textwrap.dedent(f"""\
            publishing:
              store: file://{tmp_path}/store
              backup_store: file://{tmp_path}/backup
            """)
        (tmp_path / "store").mkdir()
        (tmp_path / "backup").mkdir()
        raw, backup = LocalRaw(tmp_path / "store"), LocalRaw(tmp_path / "backup")
    text = matrix_text(publishing, LIBTORCH)
    for old, new in CHANNELS.items():
        assert old in text
        text = text.replace(old, new)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text, encoding="utf-8")
    archive = make_archive(tmp_path / "work")
    manifest = tmp_path / "work" / "relforge-manifest.json"
    write_archive_manifest(manifest, archive)
    return Setup(
        matrix=matrix, manifest=manifest, archive=archive, raw=raw, backup=backup, kind=kind
    )


@pytest.fixture(params=["local", "s3"])
def setup(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    """The archive's matrix and validated manifest, with an empty store of each kind."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELFORGE_SIGNING_KEY", raising=False)
    s3 = request.getfixturevalue("s3") if request.param == "s3" else None
    return _setup(str(request.param), tmp_path, s3)


@pytest.fixture
def local_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELFORGE_SIGNING_KEY", raising=False)
    return _setup("local", tmp_path, None)


def publish(run: Run, s: Setup, *extra: str) -> Result:
    return run("publish", str(s.matrix), "--channel", "test", "--manifest", str(s.manifest), *extra)


def promote(run: Run, s: Setup, *extra: str) -> Result:
    """The archive alone: its release's wheels are not in the channel, so the version is not
    whole (archives and wheels gate it alike) and only --partial moves it."""
    return run(
        "promote", str(s.matrix), "--version", "1.0.0", "--from", "test", "--partial", *extra
    )


def verify(run: Run, s: Setup, channel: str, *extra: str) -> Result:
    return run("verify", str(s.matrix), "--channel", channel, "--format", "json", *extra)


def checksum_text(sha: str) -> bytes:
    return f"{sha}  {NAME}\n".encode()


def test_publish_promote_verify_an_archive(run: Run, setup: Setup) -> None:
    s = setup
    sha = sha256_file(s.archive)
    dry = publish(run, s)
    assert dry.code == 0, dry.err
    assert TEST_KEY in dry.out and f"{TEST_KEY}.sha256" in dry.out
    assert _snapshot(s.raw) == {}  # a dry run writes nothing

    done = publish(run, s, "--execute")
    assert done.code == 0, done.err
    store = _snapshot(s.raw)
    assert store[TEST_KEY] == s.archive.read_bytes()
    assert store[f"{TEST_KEY}.sha256"] == checksum_text(sha)
    assert s.meta_sha256(TEST_KEY) == sha  # the sha256 travels with the object
    (mkey,) = [k for k in store if k.startswith("relforge/manifests/test/rfdemo/1.0.0/")]
    stored = json.loads(store[mkey])["entries"][CELL]
    assert (stored["sha256"], stored["size"], stored["file"]) == (
        sha,
        s.archive.stat().st_size,
        NAME,
    )
    assert not [k for k in store if k.startswith("whl/") and NAME in k]  # never on a page

    again = publish(run, s, "--execute")
    assert again.code == 0, again.err
    assert _snapshot(s.raw) == store  # a rerun is a no-op

    assert verify(run, s, "test").code == 0

    promoted = promote(run, s, "--execute")
    assert promoted.code == 0, promoted.err
    after = _snapshot(s.raw)
    assert after[RELEASE_KEY] == s.archive.read_bytes()
    assert after[f"{RELEASE_KEY}.sha256"] == checksum_text(sha)
    assert s.meta_sha256(RELEASE_KEY) == sha
    backups = _snapshot(s.backup)
    assert backups[f"rfdemo/1.0.0/{RELEASE_KEY}"] == s.archive.read_bytes()
    assert backups[f"rfdemo/1.0.0/{RELEASE_KEY}.sha256"] == checksum_text(sha)
    assert any(k.startswith("relforge/manifests/release/rfdemo/1.0.0/") for k in after)

    rerun = promote(run, s, "--execute")
    assert rerun.code == 0, rerun.err
    assert _snapshot(s.raw) == after and _snapshot(s.backup) == backups
    checked = verify(run, s, "release")
    assert checked.code == 0, checked.out + checked.err
    assert json.loads(checked.out)["clean"] is True


def test_an_unvalidated_archive_is_not_published(run: Run, setup: Setup) -> None:
    write_archive_manifest(setup.manifest, setup.archive, validated=False)
    refused = publish(run, setup, "--execute")
    assert refused.code == 5 and CELL in refused.err
    assert _snapshot(setup.raw) == {}


def test_an_archive_replaced_after_publish_is_refused_and_found(run: Run, setup: Setup) -> None:
    s = setup
    assert publish(run, s, "--execute").code == 0
    replace(s, TEST_KEY, flip(s.raw.read(TEST_KEY)))

    again = publish(run, s, "--execute")  # the validated bytes are not there: never overwritten
    assert again.code == 5, again.out + again.err
    assert TEST_KEY in again.err
    for extra in ((), ("--execute",)):
        refused = promote(run, s, *extra)
        assert refused.code == 5, refused.out + refused.err
        assert TEST_KEY in refused.err
    assert not [k for k in _snapshot(s.raw) if k.startswith("libtorch/cpu/")]
    assert _snapshot(s.backup) == {}
    found = verify(run, s, "test")
    assert found.code == 4
    kinds = {(f["kind"], f["key"]) for f in json.loads(found.out)["findings"]}
    assert ("drifted", TEST_KEY) in kinds


def test_an_edited_sha256_file_is_refused_found_and_repaired(run: Run, setup: Setup) -> None:
    s = setup
    assert publish(run, s, "--execute").code == 0
    key = f"{TEST_KEY}.sha256"
    evil_sha = hashlib.sha256(b"evil").hexdigest()
    replace(s, key, checksum_text(evil_sha))

    assert publish(run, s, "--execute").code == 5  # the file is never overwritten
    refused = promote(run, s, "--execute")
    assert refused.code == 5, refused.out + refused.err
    assert key in refused.err
    assert not [k for k in _snapshot(s.raw) if k.startswith("libtorch/cpu/")]

    found = verify(run, s, "test")
    assert found.code == 4
    (finding,) = json.loads(found.out)["findings"]
    assert (finding["kind"], finding["key"], finding["cell_id"]) == ("sidecar", key, CELL)
    assert evil_sha in finding["message"]

    plan = verify(run, s, "test", "--repair")
    assert plan.code == 4 and s.raw.read(key) == checksum_text(evil_sha)  # a plan only
    fixed = verify(run, s, "test", "--repair", "--execute")
    assert fixed.code == 0, fixed.out + fixed.err
    assert s.raw.read(key) == checksum_text(sha256_file(s.archive))
    assert verify(run, s, "test").code == 0
    assert promote(run, s, "--execute").code == 0  # now it promotes


def test_a_missing_sha256_file_is_refused_by_promote(run: Run, setup: Setup) -> None:
    s = setup
    assert publish(run, s, "--execute").code == 0
    s.raw.delete(f"{TEST_KEY}.sha256")
    refused = promote(run, s, "--execute")
    assert refused.code == 5 and "missing" in refused.err
    assert publish(run, s, "--execute").code == 0  # publish writes the missing file again
    assert promote(run, s, "--execute").code == 0


def test_an_archive_no_manifest_vouches_for_is_an_extra(run: Run, setup: Setup) -> None:
    s = setup
    assert publish(run, s, "--execute").code == 0
    stray = "libtorch/test/cpu/rfdemo-linux-x86_64-shared-with-deps-release-6.6.6+cpu.zip"
    s.raw.write(stray, make_archive(s.manifest.parent / "other", "6.6.6+cpu").read_bytes())
    s.raw.write(stray + ".sha256", b"0" * 64 + b"  x.zip\n")
    found = verify(run, s, "test")
    assert found.code == 4
    kinds = sorted((f["kind"], f["key"]) for f in json.loads(found.out)["findings"])
    assert kinds == [("extra", stray), ("extra", stray + ".sha256")]
    fixed = verify(run, s, "test", "--repair", "--execute")
    assert fixed.code == 0, fixed.out + fixed.err
    left = _snapshot(s.raw)
    assert stray not in left and any(
        k.startswith("relforge/quarantine/test/") and k.endswith(stray) for k in left
    )
    assert verify(run, s, "test").code == 0


def test_a_drifted_or_missing_release_archive_is_restored_from_the_backup(
    run: Run, setup: Setup
) -> None:
    s = setup
    assert publish(run, s, "--execute").code == 0
    assert promote(run, s, "--execute").code == 0
    good = s.raw.read(RELEASE_KEY)
    s.raw.write(RELEASE_KEY, flip(good))
    s.raw.delete(f"{RELEASE_KEY}.sha256")
    found = verify(run, s, "release")
    assert found.code == 4
    kinds = sorted((f["kind"], f["key"]) for f in json.loads(found.out)["findings"])
    assert kinds == [("drifted", RELEASE_KEY), ("sidecar", f"{RELEASE_KEY}.sha256")]
    fixed = verify(run, s, "release", "--repair", "--execute")
    assert fixed.code == 0, fixed.out + fixed.err
    assert s.raw.read(RELEASE_KEY) == good
    assert verify(run, s, "release").code == 0
    s.raw.delete(RELEASE_KEY)
    missing = verify(run, s, "release")
    assert missing.code == 4 and '"missing"' in missing.out
    assert verify(run, s, "release", "--repair", "--execute").code == 0
    assert s.raw.read(RELEASE_KEY) == good


def test_a_killed_promotion_of_an_archive_finishes_on_rerun(
    run: Run, tmp_path: Path, local_setup: Setup
) -> None:
    """Killed between two copies (the S3 side of resuming is test_promote_resume's)."""
    s = local_setup
    assert publish(run, s, "--execute").code == 0
    args = ["promote", str(s.matrix), "--version", "1.0.0"]
    args += ["--execute", "--workers", "1", "--partial"]  # the archive alone (see promote())
    argv = [sys.executable, "-m", "relforge", *args]
    proc = subprocess.Popen(
        [*paced_relforge(transfer_delay=0.4), *args, *KILLED_LEASE],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    journal = tmp_path / ".relforge" / "journal"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        lines = [ln for p in journal.glob("promote-*.jsonl") for ln in p.read_text().splitlines()]
        if sum('"done"' in ln for ln in lines) >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the promotion finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert verify(run, s, "release").code == 4  # part-way: not everything is there
    resumed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert TOOK_OVER in resumed.stderr, resumed.stderr  # the killed run's lease, once it expired
    assert "resuming" in resumed.stdout
    assert s.raw.read(RELEASE_KEY) == s.archive.read_bytes()
    assert s.raw.read(f"{RELEASE_KEY}.sha256") == checksum_text(sha256_file(s.archive))
    assert verify(run, s, "release").code == 0


def test_wheels_and_an_archive_in_one_manifest(run: Run, local_setup: Setup) -> None:
    """Archives ride along with wheels: the wheel pages list only wheels, the archive folder gets
    no pages, and both channels verify clean."""
    s = local_setup
    wheels = release_wheels(s.manifest.parent)
    write_manifest(s.manifest, wheels)
    archive = make_archive(s.manifest.parent / "more")
    manifest = load_manifest(s.manifest)
    entry = dataclasses.replace(
        next(iter(manifest.entries.values())),
        cell_id=CELL,
        file=str(archive.relative_to(s.manifest.parent)),
        size=archive.stat().st_size,
        sha256=sha256_file(archive),
        version="1.0.0+cpu",
        package_type="archive",
        variant="cpu",
        upload_subfolder="cpu",
        platform_tag=None,
        python=None,
    )
    manifest.with_entries([entry]).save(s.manifest)
    assert publish(run, s, "--execute").code == 0
    assert promote(run, s, "--execute").code == 0
    store = _snapshot(s.raw)
    assert store[RELEASE_KEY] == archive.read_bytes()
    page = json.loads(store["whl/cpu/rfdemo/index.json"])
    assert sorted(f["filename"] for f in page["files"]) == [
        "rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl",
        "rfdemo-1.0.0+cpu-py3-none-win_amd64.whl",
    ]
    assert not [k for k in store if k.startswith("libtorch/") and "index" in k]
    for channel in ("test", "release"):
        checked = verify(run, s, channel)
        assert checked.code == 0, checked.out + checked.err


def test_a_version_reaches_the_pages_when_its_archive_arrives_last(
    run: Run, local_setup: Setup
) -> None:
    """The generated CI's order: each cell uploads alone (`publish --no-index`), the wheel
    workflow's index job runs before the archive is in, the archive workflow's after it.  The
    version is whole only with its archive, so the first index leaves it off the pages and the
    second, whichever workflow runs it, puts it there."""
    s = local_setup
    wheels = release_wheels(s.manifest.parent)
    write_manifest(s.manifest, wheels)
    archive = make_archive(s.manifest.parent / "more")
    write_archive_manifest(s.manifest.parent / "archive.json", archive)
    base = load_manifest(s.manifest)
    for cell_id, entry in base.entries.items():  # one upload job per wheel cell
        one = s.manifest.parent / f"{cell_id}.json"
        base.with_entries([entry]).save(one)
        done = run("publish", str(s.matrix), "--channel", "test", "--manifest", str(one),
                   "--no-index", "--execute")  # fmt: skip
        assert done.code == 0, done.err
    index = ("index", str(s.matrix), "--channel", "test", "--execute")
    early = run(*index)
    assert early.code == 0, early.err
    assert f"missing: {CELL}" in early.out + early.err
    assert "whl/test/cpu/rfdemo/index.json" not in _snapshot(s.raw)
    done = run("publish", str(s.matrix), "--channel", "test", "--manifest",
               str(s.manifest.parent / "archive.json"), "--no-index", "--execute")  # fmt: skip
    assert done.code == 0, done.err
    last = run(*index)
    assert last.code == 0, last.err
    assert "relforge/advertised/test/rfdemo/1.0.0.json (whole)" in last.out + last.err
    page = json.loads(_snapshot(s.raw)["whl/test/cpu/rfdemo/index.json"])
    assert [f["filename"] for f in page["files"]] == [
        "rfdemo-1.0.0+cpu-py3-none-manylinux_2_28_x86_64.whl",
        "rfdemo-1.0.0+cpu-py3-none-win_amd64.whl",
    ]  # the archive counts towards the version; it is on no page


def test_nightly_keeps_the_newest_archives_and_their_sha256_files(
    run: Run, local_setup: Setup
) -> None:
    s = local_setup
    s.matrix.write_text(
        s.matrix.read_text().replace("publishing:\n", "publishing:\n  nightly_keep: 2\n")
    )
    folder = "libtorch/nightly/cpu"
    days = ("20260101", "20260102", "20260103")
    for day in days:
        version = f"1.0.0.dev{day}+cpu"
        archive = make_archive(s.manifest.parent / day, version)
        write_archive_manifest(s.manifest, archive, version=version, channel="nightly")
        args = ("publish", str(s.matrix), "--channel", "nightly", "--manifest", str(s.manifest))
        done = run(*args, "--execute")
        assert done.code == 0, done.out + done.err
    left = sorted(k for k in _snapshot(s.raw) if k.startswith(folder))
    assert left == [
        f"{folder}/rfdemo-linux-x86_64-shared-with-deps-release-1.0.0.dev{day}+cpu.zip{suffix}"
        for day in days[1:]
        for suffix in ("", ".sha256")
    ]
    checked = verify(run, s, "nightly")
    assert checked.code == 0, checked.out + checked.err
