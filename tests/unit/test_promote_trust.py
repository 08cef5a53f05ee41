"""The manifest is the root of trust (local store, CLI in-process): tampered sidecars, a wheel
changed together with its stored manifest, drift after promotion, pinned manifest digests and
Ed25519 signatures.  Each tamper case is refused with exit 5 and nothing is advertised."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from relforge.manifest import load_manifest
from tests.conftest import Result
from tests.promote_kit import matrix_text, release_wheels, write_manifest

CUDA = "wheel-linux-x86_64-py3.11-cu128"
CUDA_WHEEL = "rfdemo-1.0.0+cu128-py3-none-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return release_wheels(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def work(tmp_path: Path, built: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RELFORGE_SIGNING_KEY", raising=False)
    (tmp_path / "matrix.yaml").write_text(matrix_text(), encoding="utf-8")
    dist = tmp_path / "dist"
    dist.mkdir()
    files = {}
    for cell, wheel in built.items():
        files[cell] = dist / wheel.name
        shutil.copy(wheel, files[cell])
    write_manifest(tmp_path / "relforge-manifest.json", files)
    return tmp_path


def store(work: Path) -> Path:
    return work / ".relforge" / "store"


def publish(run: Callable[..., Result], *extra: str) -> Result:
    args = ("publish", "matrix.yaml", "--channel", "test", "--manifest")
    return run(*args, "relforge-manifest.json", *extra)


def replace(path: Path, data: bytes) -> None:
    path.unlink()  # a new file, as an upload by another tool would make
    path.write_bytes(data)


def advertised(work: Path) -> str:
    """Every index page of the store, concatenated."""
    return "".join(p.read_text() for p in sorted(store(work).rglob("index.*")))


def test_published_manifest_records_the_sidecar_and_is_content_addressed(
    work: Path, run: Callable[..., Result]
) -> None:
    assert publish(run, "--execute").code == 0
    (stored,) = (store(work) / "relforge/manifests/test/rfdemo/1.0.0").glob("*.json")
    assert stored.stem == hashlib.sha256(stored.read_bytes()).hexdigest()
    entry = load_manifest(stored).entries[CUDA]
    sidecar = store(work) / "whl/test/cu128" / (CUDA_WHEEL + ".metadata")
    assert entry.metadata_sha256 == hashlib.sha256(sidecar.read_bytes()).hexdigest()
    assert entry.metadata_size == sidecar.stat().st_size


def test_a_tampered_sidecar_is_never_promoted_or_advertised(
    work: Path, run: Callable[..., Result]
) -> None:
    assert publish(run, "--execute").code == 0
    sidecar = store(work) / "whl/test/cu128" / (CUDA_WHEEL + ".metadata")
    good = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    evil = sidecar.read_bytes().replace(b"\n\n", b"\nRequires-Dist: evil-package\n\n", 1)
    replace(sidecar, evil)
    for extra in ((), ("--execute",)):
        refused = run("promote", "matrix.yaml", "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert f"whl/test/cu128/{CUDA_WHEEL}.metadata" in refused.err
        assert "not the wheel's own METADATA" in refused.err
    assert not (store(work) / "whl/cu128").exists()
    assert not (store(work) / "relforge/manifests/release").exists()
    # re-indexing the test channel does not advertise the tampered sidecar either
    index = run("index", "matrix.yaml", "--channel", "test", "--execute")
    assert index.code == 5, index.out + index.err
    assert f"{CUDA_WHEEL}.metadata" in index.err
    pages = advertised(work)
    assert hashlib.sha256(evil).hexdigest() not in pages and good in pages


def test_a_wheel_changed_with_its_stored_manifest_is_refused(
    work: Path, run: Callable[..., Result]
) -> None:
    assert publish(run, "--execute").code == 0
    wheel = store(work) / "whl/test/cu128" / CUDA_WHEEL
    other = wheel.read_bytes() + b"\0trailing"
    replace(wheel, other)
    (stored,) = (store(work) / "relforge/manifests/test/rfdemo/1.0.0").glob("*.json")
    data = json.loads(stored.read_text())
    entry = data["entries"][CUDA]
    entry["sha256"], entry["size"] = hashlib.sha256(other).hexdigest(), len(other)
    replace(stored, (json.dumps(data, indent=2) + "\n").encode())
    for extra in ((), ("--execute",)):
        refused = run("promote", "matrix.yaml", "--version", "1.0.0", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert stored.name in refused.err and "its key does not name" in refused.err
    assert not (store(work) / "whl/cu128").exists()
    index = run("index", "matrix.yaml", "--channel", "test", "--execute")
    assert index.code == 5 and stored.name in index.err
    assert hashlib.sha256(other).hexdigest() not in advertised(work)


def test_a_release_wheel_that_drifted_after_promotion_is_not_advertised(
    work: Path, run: Callable[..., Result]
) -> None:
    assert publish(run, "--execute").code == 0
    assert run("promote", "matrix.yaml", "--version", "1.0.0", "--execute").code == 0
    wheel = store(work) / "whl/cu128" / CUDA_WHEEL
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    drifted = wheel.read_bytes()[:-4] + b"XXXX"
    replace(wheel, drifted)
    before = advertised(work)
    for extra in ((), ("--execute",)):
        refused = run("index", "matrix.yaml", "--channel", "release", *extra)
        assert refused.code == 5, refused.out + refused.err
        assert f"whl/cu128/{CUDA_WHEEL}" in refused.err
        assert hashlib.sha256(drifted).hexdigest() in refused.err
    assert advertised(work) == before and good in before
    assert hashlib.sha256(drifted).hexdigest() not in before
    replace(wheel, drifted[:-4] + (work / "dist" / CUDA_WHEEL).read_bytes()[-4:])  # restored
    assert run("index", "matrix.yaml", "--channel", "release", "--execute").code == 0


def test_manifest_digest_pins_the_approved_manifest(work: Path, run: Callable[..., Result]) -> None:
    assert publish(run, "--execute").code == 0
    (stored,) = (store(work) / "relforge/manifests/test/rfdemo/1.0.0").glob("*.json")
    promote = ("promote", "matrix.yaml", "--version", "1.0.0")
    bad = run(*promote, "--manifest-digest", "abc")
    assert bad.code == 2 and "--manifest-digest" in bad.err
    other = run(*promote, "--manifest-digest", "f" * 64)
    assert other.code == 5 and stored.stem in other.err and "approved" in other.err
    local = run(*promote, "--manifest", "relforge-manifest.json", "--manifest-digest", "f" * 64)
    assert local.code == 5
    done = run(*promote, "--manifest-digest", stored.stem.upper(), "--execute")
    assert done.code == 0, done.out + done.err
    (released,) = (store(work) / "relforge/manifests/release/rfdemo/1.0.0").glob("*.json")
    assert released.stem in done.out
    stage = ("pypi", "stage", "matrix.yaml", "--version", "1.0.0")
    assert run(*stage, "--manifest-digest", stored.stem).code == 5  # the test channel's
    assert run(*stage, "--manifest-digest", released.stem).code == 0


def _keypair() -> tuple[str, str]:
    private = Ed25519PrivateKey.generate()
    raw_private = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    raw_public = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(raw_private).decode(), base64.b64encode(raw_public).decode()


def test_signed_manifests(
    work: Path, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, public = _keypair()
    other_secret, _ = _keypair()
    matrix = work / "matrix.yaml"
    matrix.write_text(matrix_text(f"publishing:\n  trusted_keys: ['{public}']\n"))
    unsigned = publish(run, "--execute")
    assert unsigned.code == 2 and "RELFORGE_SIGNING_KEY" in unsigned.err
    monkeypatch.setenv("RELFORGE_SIGNING_KEY", other_secret)
    untrusted = publish(run, "--execute")
    assert untrusted.code == 2 and other_secret not in untrusted.err + untrusted.out
    monkeypatch.setenv("RELFORGE_SIGNING_KEY", secret)
    done = publish(run, "--execute")
    assert done.code == 0, done.err
    assert secret not in done.out + done.err
    (stored,) = (store(work) / "relforge/manifests/test/rfdemo/1.0.0").glob("*.json")
    signature = stored.with_name(stored.name + ".sig")
    assert signature.is_file()
    good = signature.read_bytes()

    # a valid signature by a key that is not trusted: refused
    from relforge.signing import Trust

    forged = Trust(signing_key=base64.b64decode(other_secret)).sign(stored.read_bytes())
    assert forged is not None
    replace(signature, forged)
    wrong = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert wrong.code == 5 and "not valid for any key" in wrong.err and stored.name in wrong.err
    signature.unlink()
    missing = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert missing.code == 5 and "is not signed" in missing.err
    signature.write_bytes(good)
    promoted = run("promote", "matrix.yaml", "--version", "1.0.0", "--execute")
    assert promoted.code == 0, promoted.err
    (released,) = (store(work) / "relforge/manifests/release/rfdemo/1.0.0").glob("*.json")
    assert released.with_name(released.name + ".sig").is_file()
    assert run("pypi", "stage", "matrix.yaml", "--version", "1.0.0").code == 0
    assert run("index", "matrix.yaml", "--channel", "release", "--execute").code == 0


def test_a_bad_trusted_key_is_a_config_error_at_its_line(
    work: Path, run: Callable[..., Result]
) -> None:
    (work / "matrix.yaml").write_text(matrix_text("publishing:\n  trusted_keys: [nope]\n"))
    bad = run("index", "matrix.yaml", "--channel", "test")
    assert bad.code == 2, bad.err
    assert "matrix.yaml:10:18:" in bad.err and "publishing.trusted_keys[0]" in bad.err
    (work / "matrix.yaml").write_text(matrix_text("publishing:\n  trusted_keys: key\n"))
    assert run("index", "matrix.yaml", "--channel", "test").code == 2


def test_publish_refuses_a_manifest_that_records_another_sidecar(
    work: Path, run: Callable[..., Result]
) -> None:
    path = work / "relforge-manifest.json"
    data = json.loads(path.read_text())
    data["entries"][CUDA]["metadata_sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    refused = publish(run, "--execute")
    assert refused.code == 5 and CUDA in refused.err and "METADATA" in refused.err
    assert not store(work).exists()


def test_a_manifest_under_an_old_16_hex_key_is_still_read_and_checked(
    work: Path, run: Callable[..., Result]
) -> None:
    assert publish(run, "--execute").code == 0
    (stored,) = (store(work) / "relforge/manifests/test/rfdemo/1.0.0").glob("*.json")
    old = stored.with_name(stored.stem[:16] + ".json")  # as relforge stored it before
    stored.rename(old)
    plan = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert plan.code == 0, plan.out + plan.err
    data = old.read_bytes()
    replace(old, data.replace(b'"release": "1.0"', b'"release": "1.1"'))
    refused = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert refused.code == 5 and old.name in refused.err


def test_a_forged_manifest_under_its_own_digest_is_caught_by_the_pin(
    work: Path, run: Callable[..., Result]
) -> None:
    """Content addressing alone cannot catch a new, self-consistent manifest: beside the
    original it is a conflict; alone, only a pinned digest (or a signature) refuses it."""
    assert publish(run, "--execute").code == 0
    folder = store(work) / "relforge/manifests/test/rfdemo/1.0.0"
    (stored,) = folder.glob("*.json")
    wheel = store(work) / "whl/test/cu128" / CUDA_WHEEL
    other = wheel.read_bytes() + b"\0trailing"
    replace(wheel, other)
    data = json.loads(stored.read_text())
    data["entries"][CUDA].update(sha256=hashlib.sha256(other).hexdigest(), size=len(other))
    forged = (json.dumps(data, indent=2) + "\n").encode()
    (folder / f"{hashlib.sha256(forged).hexdigest()}.json").write_bytes(forged)
    both = run("promote", "matrix.yaml", "--version", "1.0.0")
    assert both.code == 5 and "two manifests" in both.err
    approved = stored.stem
    stored.unlink()
    pinned = run("promote", "matrix.yaml", "--version", "1.0.0", "--manifest-digest", approved)
    assert pinned.code == 5 and approved in pinned.err
    assert not (store(work) / "whl/cu128").exists()
