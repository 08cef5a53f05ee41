"""The build cache: an entry is reused only when it is whole and its bytes are the ones stored,
and its key follows what the build reads — not the matrix's bytes, not where the output goes."""

from __future__ import annotations

from pathlib import Path

from relforge.builders.buildplan import BuildRequest, plan_build
from relforge.builders.cache import BuildCache, cache_key
from relforge.builders.executor import run_build
from relforge.builders.manifestfile import write_manifest
from relforge.manifest import sha256_file
from relforge.matrix.load import load_matrix
from tests.buildstandins import Quiet, RecordingBuilder


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


# -- the key of a real run: what the build reads, not the matrix's bytes nor the out folder --

MATRIX = """\
schema_version: 1
project:
  name: demo
  download_url: https://example.org
  build:
    source: .
channels:
  test: {version_scheme: final, prefix: whl/test}
releases:
  "1.0":
    python: ["3.12"]
    platforms:
      linux-x86_64:
        os: linux
        arch: x86_64
        platform_tag: manylinux_2_28_x86_64
    accelerators:
      cpu:
        kind: cpu
        platforms:
          linux-x86_64: {image: "img:cpu"}
      cu130:
        kind: cuda
        version: 13.0.0
        arch_list: ["8.0", "9.0"]
        platforms:
          linux-x86_64: {image: "img:cu130"}
"""
CPU = "wheel-linux-x86_64-py3.12-cpu"
CUDA = "wheel-linux-x86_64-py3.12-cu130"


def _project(root: Path, matrix: str = MATRIX) -> Path:
    """A source tree that keeps its matrix (as matrix/demo.yaml, `source: ..`)."""
    (root / "demo").mkdir(parents=True, exist_ok=True)
    (root / "demo" / "__init__.py").write_text("x = 1\n")
    (root / "version.txt").write_text("1.0.0\n")
    (root / "matrix").mkdir(exist_ok=True)
    path = root / "matrix" / "demo.yaml"
    path.write_text(matrix.replace("source: .", "source: .."), encoding="utf-8")
    return path


def _run(matrix: Path, out: Path, state: Path) -> dict[str, tuple[str, str]]:
    """cell → (status, cache key) of a build of every cell."""
    plan = plan_build(
        BuildRequest(
            matrix=load_matrix(matrix),
            matrix_file=str(matrix),
            release="1.0",
            channel="test",
            out=out,
            state=state,
            jobs=1,
            tag="v1.0.0-rc1",
        )
    )
    results = run_build(plan, {c.id: RecordingBuilder() for c in plan.cells}, Quiet())
    write_manifest(plan, results)  # as `relforge build` does
    keys: dict[str, tuple[str, str]] = {}
    for r in results:
        assert r.entry is not None, r.reason
        keys[r.cell.id] = (r.status, str(r.entry.build["cache_key"]))
    return keys


def _statuses(keys: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {cell: status for cell, (status, _) in keys.items()}


def test_out_and_state_inside_the_source_and_matrix_comments_keep_the_cache(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    matrix = _project(root)
    out, state = root / "artifacts", root / "state"  # inside the source, not named dist/.relforge
    first = _run(matrix, out, state)
    assert _statuses(first) == {CPU: "built", CUDA: "built"}
    assert (out / "relforge-manifest.json").is_file()  # the out folder now holds files

    second = _run(matrix, out, state)
    assert second == {cell: ("cached", key) for cell, (_, key) in first.items()}

    # a comment, and the cells moved down the file: their facts are the same
    text = matrix.read_text()
    matrix.write_text("# the demo's matrix\n\n" + text.replace("releases:", "# note\nreleases:"))
    assert _run(matrix, out, state) == second
    # the same tree with the output somewhere else: the same keys
    assert _run(matrix, tmp_path / "elsewhere", state) == second


def test_a_change_the_build_reads_misses_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "project"
    matrix = _project(root)
    out, state = root / "dist", root / ".relforge"
    first = _run(matrix, out, state)

    (root / "demo" / "__init__.py").write_text("x = 2\n")  # a source file
    changed = _run(matrix, out, state)
    assert _statuses(changed) == {CPU: "built", CUDA: "built"}
    assert {c: k for c, (_, k) in changed.items()}.keys() == first.keys()
    assert all(changed[c][1] != first[c][1] for c in first)

    matrix.write_text(matrix.read_text().replace('["8.0", "9.0"]', '["9.0"]'))  # the arch list
    arch = _run(matrix, out, state)
    assert _statuses(arch) == {CPU: "cached", CUDA: "built"}

    matrix.write_text(matrix.read_text().replace('python: ["3.12"]', 'python: ["3.13"]'))
    python = _run(matrix, out, state)  # another Python: other cells, built
    assert set(_statuses(python).values()) == {"built"}
    assert len(python) == 2 and not set(python) & set(first)
