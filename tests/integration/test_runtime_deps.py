"""Runtime validation installs a wheel's ordinary dependencies before it is published — from an
upstream index (`--runtime-index`) or from the channel's mirrored closure (`deps mirror`) —
and never takes the project under test from that index: it is always the validated file.  The
manifest keeps each artifact's latest validation, so a runtime failure of an earlier run does
not block publishing after a clean rerun.

The project (`rfdemo`, cell wheel-linux-x86_64-py3.11-cpu) requires rfdep-a → rfdep-b →
rfdep-c from an upstream index served here; that upstream also holds another build of
rfdemo 1.0.0+cpu, which must never be the one installed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from relforge.manifest import load_manifest, sha256_file
from tests.conftest import Result
from tests.integration.conftest import free_port
from tests.integration.test_deps_closure import CHAIN, make_wheel, upstream_index
from tests.promote_kit import matrix_text, write_manifest

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

CELL = "wheel-linux-x86_64-py3.11-cpu"
VERSION = "1.0.0+cpu"
TAG = "cp311-cp311-manylinux_2_28_x86_64"
# The smoke test (the default one: `import rfdemo`) imports the package, which imports its
# dependency.
MODULE = "import rfdep_a\n__version__ = {version!r}\nBUILT_BY = {who!r}\n"


def _rfdemo(out: Path, who: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    module = MODULE.format(version=VERSION, who=who)
    return make_wheel(
        out, "rfdemo", VERSION, ["rfdep-a>=1"], TAG, module=module, requires_python=">=3.11"
    )


def _upstream_with_an_impostor(root: Path) -> Path:
    """The rfdep chain, and an rfdemo 1.0.0+cpu built by someone else, on one index."""
    upstream_index(root)
    impostor = _rfdemo(root / "files", "upstream")
    (root / "simple" / "rfdemo").mkdir()
    (root / "simple" / "rfdemo" / "index.html").write_text(
        f'<a href="../../files/{impostor.name}#sha256={sha256_file(impostor)}">'
        f"{impostor.name}</a>\n"
    )
    return root


def _manifest(work: Path) -> Path:
    """A build manifest of our rfdemo wheel for the cell, not yet validated."""
    path = work / "relforge-manifest.json"
    write_manifest(path, {CELL: _rfdemo(work / "dist", "us")}, validated=False)
    return path


def _setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, static_server: Callable[[Path], str]
) -> tuple[Path, Path, str]:
    """The matrix (a local store), the build manifest of our wheel, the upstream's URL."""
    monkeypatch.chdir(tmp_path)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(), encoding="utf-8")
    upstream = static_server(_upstream_with_an_impostor(tmp_path / "upstream")) + "/simple/"
    return matrix, _manifest(tmp_path / "work"), upstream


def _verdicts(result: Result) -> dict[str, tuple[str, str]]:
    [report] = json.loads(result.out)["artifacts"]
    return {v["check"]: (v["status"], v["message"]) for v in report["verdicts"]}


def test_dependencies_come_from_upstream_or_the_mirrored_closure_never_the_project(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    matrix, manifest, upstream = _setup(tmp_path, monkeypatch, static_server)
    validate = ("validate", str(matrix), "-r", "1.0", "-c", "test", "--manifest", str(manifest),
                "--select", f"id={CELL}", "--format", "json")  # fmt: skip
    publish = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest),
               "--partial", "--execute")  # fmt: skip

    # No dependency source: installed without them, and the smoke test cannot import rfdep_a.
    bare = run(*validate, "--runtime")
    assert bare.code == 4, bare.out + bare.err
    verdicts = _verdicts(bare)
    assert verdicts["RF-R001"][0] == "warn"  # the wheel installed; its dependencies did not
    assert "without its dependencies (rfdep-a>=1: no --runtime-index" in verdicts["RF-R001"][1]
    assert "`--runtime-index URL`" in verdicts["RF-R001"][1]
    assert "`relforge deps mirror`" in verdicts["RF-R001"][1]
    assert verdicts["RF-R002"][0] == "fail" and "rfdep_a" in verdicts["RF-R002"][1]
    assert "rfdep_a comes from rfdep-a>=1, which RF-R001 left out" in verdicts["RF-R002"][1]
    assert "RF-R002" in run(*publish).err  # refused: the runtime failure is on record

    # From the upstream: the dependencies, but our file — not the upstream's rfdemo 1.0.0+cpu.
    smoke = ("python", "-c", "import rfdemo; print(rfdemo.BUILT_BY, rfdemo.__version__)")
    text = matrix_text().replace("  name: rfdemo\n", f"  name: rfdemo\n  build:\n"
                                 f"    smoke: {json.dumps(list(smoke))}\n", 1)  # fmt: skip
    matrix.write_text(text, encoding="utf-8")
    upstream_run = run(*validate, "--runtime", "--runtime-index", upstream)
    assert upstream_run.code == 0, upstream_run.out + upstream_run.err
    verdicts = _verdicts(upstream_run)
    assert verdicts["RF-R001"] == (
        "pass",
        f"installed the file (dependencies from {upstream}) with Python 3.11",
    )
    assert verdicts["RF-R002"] == ("pass", "us 1.0.0+cpu")  # the upstream's says "upstream"

    # The latest validation is the manifest's: a static rerun after a failed runtime one is
    # what publish reads (the runtime failure of the first run blocked publishing).
    assert run(*validate, "--runtime").code == 4
    static = run(*validate)
    assert static.code == 0, static.out + static.err
    checks = {v.check for v in load_manifest(manifest).entries[CELL].verdicts}
    assert not any(c.startswith("RF-R") for c in checks)
    published = run(*publish)
    assert published.code == 0, published.err

    # Mirror the closure into the channel; a runtime validation now takes it from there.
    mirrored = run("deps", "mirror", str(matrix), "--channel", "test", "--upstream-index",
                   upstream, "--execute")  # fmt: skip
    assert mirrored.code == 0, mirrored.out + mirrored.err
    from_channel = run(*validate, "--runtime")
    assert from_channel.code == 0, from_channel.out + from_channel.err
    verdicts = _verdicts(from_channel)
    assert (
        "dependencies from the channel's mirrored closure in whl/test/cpu/"
        in (verdicts["RF-R001"][1])
    )
    assert verdicts["RF-R002"] == ("pass", "us 1.0.0+cpu")
    assert set(CHAIN) <= {p.name for p in (tmp_path / ".relforge/store/whl/test/cpu").iterdir()}


def test_a_store_it_cannot_read_leaves_the_dependencies_out_with_a_note(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build job validates without the store's credentials: the mirrored closure is an
    optional source, so an unreadable store is a note, not an environment fault."""
    monkeypatch.chdir(tmp_path)
    down = f"http://127.0.0.1:{free_port()}"
    publishing = f"publishing:\n  store: s3://nowhere/dl\n  s3_endpoint_url: {down}\n"
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(publishing + "  s3_attempts: 1\n"), encoding="utf-8")
    manifest = _manifest(tmp_path / "work")
    result = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--manifest",
                 str(manifest), "--select", f"id={CELL}", "--runtime",
                 "--format", "json")  # fmt: skip
    assert result.code == 4, result.out + result.err  # the smoke test cannot import rfdep_a
    assert result.err.startswith("note: no mirrored closure: ") and "s3://nowhere/dl" in result.err
    assert _verdicts(result)["RF-R001"][0] == "warn"
    assert "without its dependencies (rfdep-a>=1" in _verdicts(result)["RF-R001"][1]


def test_the_closure_of_a_build_is_mirrored_before_it_is_validated_and_published(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    """A first version: nothing is published yet, so `deps mirror --manifest` resolves the
    build's own wheel; then the runtime check takes the dependencies from the channel, and the
    published wheel installs from the channel alone."""
    matrix, manifest, upstream = _setup(tmp_path, monkeypatch, static_server)
    mirror = ("deps", "mirror", str(matrix), "--channel", "test", "--upstream-index", upstream)
    unpublished = run(*mirror, "--execute")
    assert unpublished.code == 3 and "publish first, or name the build's manifest" in (
        unpublished.err
    )
    mirrored = run(*mirror, "--manifest", str(manifest), "--execute")
    assert mirrored.code == 0, mirrored.out + mirrored.err
    assert "2 cell(s) have no wheel to resolve" in mirrored.out  # the manifest has one of three
    folder = tmp_path / ".relforge/store/whl/test/cpu"
    assert sorted(p.name for p in folder.glob("*.whl")) == [
        "rfdep_a-1.0-py3-none-any.whl", "rfdep_b-1.0-py3-none-any.whl",
        "rfdep_c-1.0-py3-none-any.whl",
    ]  # fmt: skip
    validated = run("validate", str(matrix), "-r", "1.0", "-c", "test", "--manifest",
                    str(manifest), "--select", f"id={CELL}", "--runtime",
                    "--format", "json")  # fmt: skip
    assert validated.code == 0, validated.out + validated.err
    assert "the channel's mirrored closure in whl/test/cpu/" in _verdicts(validated)["RF-R001"][1]
    publish = ("publish", str(matrix), "--channel", "test", "--manifest", str(manifest))
    assert run(*publish, "--partial", "--execute").code == 0
    checked = run("deps", "check", str(matrix), "--channel", "test")
    assert checked.code == 0 and f"ok    {CELL}" in checked.out, checked.out + checked.err
    other = run(*mirror, "--manifest", str(manifest), "--channel", "nightly")
    assert other.code == 2 and "a manifest of the test channel, not nightly" in other.err
