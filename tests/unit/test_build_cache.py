"""The build cache: an entry is reused only when it is whole and its bytes are the ones stored."""

from __future__ import annotations

from pathlib import Path

from relforge.builders.cache import BuildCache, cache_key
from relforge.manifest import sha256_file


def test_an_entry_comes_back_with_its_hash(tmp_path: Path) -> None:
    artifact = tmp_path / "demo-1.0-py3-none-any.whl"
    artifact.write_bytes(b"wheel bytes")
    cache = BuildCache(tmp_path / "cache")
    key = cache_key({"cell": "a", "source": "digest"})
    assert cache.get(key) is None
    stored = cache.put(key, artifact, {"builder": "host"})
    hit = cache.get(key)
    assert hit is not None and hit.path == stored.path
    assert (hit.size, hit.sha256) == (11, sha256_file(artifact))
    assert hit.info == {"builder": "host"}
    assert cache_key({"source": "digest", "cell": "a"}) == key  # key order does not matter
    assert cache_key({"cell": "a", "source": "other"}) != key


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    """Same size, other bytes (a disk or hand edit): rebuilt, never handed out as the build."""
    artifact = tmp_path / "demo-1.0-py3-none-any.whl"
    artifact.write_bytes(b"wheel bytes")
    cache = BuildCache(tmp_path / "cache")
    key = cache_key({"cell": "a"})
    stored = cache.put(key, artifact, {})
    stored.path.write_bytes(b"WHEEL BYTES")
    assert cache.get(key) is None
    stored.path.write_bytes(b"short")
    assert cache.get(key) is None
    (stored.path.parent / "entry.json").write_text("{not json")
    assert cache.get(key) is None
