"""Dependency closure: the example project, built with an extra requirement on rfdep-a
(rfdep-a → rfdep-b → rfdep-c, tiny wheels on an upstream index made here and served over HTTP),
is published; `deps check` names what is missing; `deps mirror` fills the channel (verified
against the upstream's hashes, recorded, indexed); then real pip and uv install from the channel
index alone; a channel missing one transitive dependency fails the check again."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relforge.interpreters import find_interpreter
from tests.conftest import REPO, Result
from tests.integration.conftest import S3, free_port
from tests.integration.example_project import example_matrix
from tests.pacedcli import paced_relforge
from tests.promote_kit import matrix_text, write_manifest

Run = Callable[..., Result]
pytestmark = pytest.mark.slow

CHAIN = {"rfdep-a": ["rfdep-b>=1"], "rfdep-b": ["rfdep-c==1.0"], "rfdep-c": []}
CPU = "whl/test/cpu"
REQUIRES_A = '        extra_install_requires: ["rfdep-a>=1"]\n'


def make_wheel(
    out: Path,
    name: str,
    version: str,
    requires: list[str],
    tag: str = "py3-none-any",
    *,
    module: str = "",
    requires_python: str = ">=3.8",
) -> Path:
    """A pure-Python wheel written with zipfile: a module (NAME, and `module` after it),
    METADATA, WHEEL and RECORD."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": f"NAME = {name!r}\n{module}".encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Requires-Python: {requires_python}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
        ).encode(),
    }
    rows = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    rows.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(rows) + "\n").encode()
    wheel = out / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():  # a fixed date: every index here serves one file
            zf.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return wheel


def upstream_index(
    root: Path, *, tamper: str = "", hashes: bool = True, metadata: bool = False
) -> Path:
    """A PEP 503 index of the chain under root/simple/, files under root/files/.  `tamper`
    names a project whose link carries a wrong sha256; with `metadata`, PEP 658 sidecars let
    pip resolve without downloading any wheel."""
    files = root / "files"
    files.mkdir(parents=True)
    links, attrs = {}, {}
    for name, requires in CHAIN.items():
        wheel = make_wheel(files, name, "1.0", requires)
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if name == tamper:
            sha = hashlib.sha256(b"something else").hexdigest()
        links[name] = f"../../files/{wheel.name}" + (f"#sha256={sha}" if hashes else "")
        if metadata:
            with zipfile.ZipFile(wheel) as zf:
                meta = zf.read(f"{name.replace('-', '_')}-1.0.dist-info/METADATA")
            (files / f"{wheel.name}.metadata").write_bytes(meta)
            attrs[name] = f' data-core-metadata="sha256={hashlib.sha256(meta).hexdigest()}"'
    simple = root / "simple"
    for name, href in links.items():
        (simple / name).mkdir(parents=True)
        (simple / name / "index.html").write_text(
            f'<!DOCTYPE html><html><body><a href="{href}"{attrs.get(name, "")}>'
            f"{href.split('/')[-1].split('#')[0]}</a>"
            "</body></html>\n"
        )
    body = "".join(f'<a href="{n}/">{n}</a>' for n in links)
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>{body}</body></html>\n")
    return root


def publish_rfdemo(run: Run, tmp_path: Path, publishing: str) -> Path:
    """rfdemo 1.0.0+cpu (requiring rfdep-a) published to the test channel of the store that
    `publishing` names, as one cell of three (`--partial`); returns the matrix's path."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_text(publishing), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    tag = "py3-none-manylinux_2_28_x86_64"
    wheel = make_wheel(work, "rfdemo", "1.0.0+cpu", ["rfdep-a>=1"], tag=tag)
    manifest = work / "relforge-manifest.json"
    write_manifest(manifest, {"wheel-linux-x86_64-py3.11-cpu": wheel})
    published = run("publish", str(matrix), "--channel", "test", "--manifest", str(manifest),
                    "--partial", "--execute")  # fmt: skip
    assert published.code == 0, published.err
    return matrix


def install(
    tool: str, python: str, venv: Path, index_url: str, project: str = "hello-native"
) -> str:
    """Install `project` with real pip or uv from `index_url` only; what imports."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    bindir = Path(sys.executable).parent
    if tool == "pip":
        argv = [sys.executable, "-m", "pip", "--python", target, "--isolated", "install"]
        argv += ["--no-cache-dir", "--index-url", index_url, project]
    else:
        argv = [str(bindir / "uv"), "pip", "install", "--no-config", "--no-cache"]
        argv += ["--python", target, "--index-url", index_url, project]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    module = project.replace("-", "_")
    probe = f"import {module}, rfdep_a, rfdep_b, rfdep_c; print(rfdep_c.NAME)"
    return subprocess.run(
        [target, "-c", probe], capture_output=True, text=True, check=True, cwd=venv
    ).stdout.strip()


def test_mirror_fills_the_closure_and_check_proves_it(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    monkeypatch.chdir(tmp_path)
    cpu = "        kind: cpu\n"
    matrix = str(example_matrix(tmp_path, {cpu: cpu + REQUIRES_A}))
    select = ("--select", "python=3.12,variant=cpu")
    built = run("build", matrix, "-r", "1.0", "--channel", "test", "--tag", "v1.0.0-rc1",
                "--builder", "host", *select)  # fmt: skip
    assert built.code == 0, built.err
    manifest = str(tmp_path / "dist" / "relforge-manifest.json")
    checked = run("validate", matrix, "-r", "1.0", "--channel", "test", "--manifest", manifest,
                  *select)  # fmt: skip
    assert checked.code == 0, checked.out + checked.err
    # a selection of the matrix's cells: --partial puts the version on the pages anyway
    published = run("publish", matrix, "--channel", "test", "--manifest", manifest, "--partial",
                    "--execute")  # fmt: skip
    assert published.code == 0, published.err
    store = tmp_path / ".relforge" / "store"

    missing = run("deps", "check", matrix, "--channel", "test")
    assert missing.code == 4, missing.out + missing.err
    assert "wheel-linux-x86_64-py3.12-cpu" in missing.err and "rfdep-a" in missing.err
    assert "no hello-native in whl/test/cpu/" in missing.out  # cells not built: not checked

    upstream = static_server(upstream_index(tmp_path / "upstream")) + "/simple/"
    before = sorted(p.name for p in (store / CPU).iterdir())
    dry = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", upstream)
    assert dry.code == 0, dry.err
    assert "3 dependency wheel(s), 3 to copy" in dry.out and "dry run" in dry.out
    assert sorted(p.name for p in (store / CPU).iterdir()) == before  # a dry run writes nothing
    assert not (store / "relforge" / "deps").exists()

    done = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", upstream,
               "--execute", "--format", "json")  # fmt: skip
    assert done.code == 0, done.out + done.err
    report = json.loads(done.out)  # progress went to stderr: stdout is the document alone
    assert next(iter(report)) == "schema_version" and report["executed"] is True
    assert report["created"] == 6  # three wheels and their PEP 658 sidecars
    assert report["recorded"] == [{"record": f"relforge/deps/{CPU}.json", "files": 3}]
    assert report["indexed"] == [CPU]
    assert [w["action"] for w in report["wheels"]] == ["copy"] * 3
    for name in ("rfdep_a", "rfdep_b", "rfdep_c"):
        wheel = store / CPU / f"{name}-1.0-py3-none-any.whl"
        assert wheel.read_bytes() == (tmp_path / "upstream" / "files" / wheel.name).read_bytes()
        assert (store / CPU / f"{wheel.name}.metadata").is_file()  # PEP 658 for mirrored files
    page = json.loads((store / CPU / "rfdep-c" / "index.json").read_text())
    assert page["files"][0]["core-metadata"]
    record = json.loads((store / "relforge" / "deps" / f"{CPU}.json").read_text())
    assert [f["name"] for f in record["files"]] == ["rfdep-a", "rfdep-b", "rfdep-c"]
    for f in record["files"]:
        data = (store / CPU / f["filename"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["size"] == len(data)
        assert f["upstream_url"].endswith("/files/" + f["filename"])
        assert f["cells"] == ["wheel-linux-x86_64-py3.12-cpu"]
    assert not list((store / "whl" / "test" / "cu130").glob("rfdep*"))  # cu130 has no wheel

    again = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", upstream,
                "--execute")  # fmt: skip
    assert again.code == 0 and "0 object(s) written" in again.out, again.out + again.err
    assert "everything was already in place" in again.out and "recorded" not in again.out
    # the same for machines: one versioned document on stdout, the plan and what was done
    planned = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", upstream,
                  "--format", "json")  # fmt: skip
    assert planned.code == 0, planned.err
    plan = json.loads(planned.out)
    assert list(plan)[:2] == ["schema_version", "channel"] and plan["executed"] is False
    assert [w["action"] for w in plan["wheels"]] == ["skip"] * 3
    assert plan["records"] == [f"relforge/deps/{CPU}.json"]
    assert plan["resolved_cells"] == ["wheel-linux-x86_64-py3.12-cpu"]

    ok = run("deps", "check", matrix, "--channel", "test")
    assert ok.code == 0, ok.out + ok.err
    assert "ok    wheel-linux-x86_64-py3.12-cpu" in ok.out

    python = find_interpreter("3.12")
    assert python is not None
    served = static_server(store) + f"/{CPU}/"
    assert install("pip", python.executable, tmp_path / "venv-pip", served) == "rfdep-c"
    assert install("uv", python.executable, tmp_path / "venv-uv", served) == "rfdep-c"

    # One transitive dependency disappears from the channel: the check names it (exit 4).
    for path in (store / CPU).glob("rfdep_c-*"):
        path.unlink()
    assert run("index", matrix, "--channel", "test", "--execute").code == 0
    broken = run("deps", "check", matrix, "--channel", "test")
    assert broken.code == 4, broken.out + broken.err
    assert "missing rfdep-c" in broken.err and "rfdep-a" not in broken.err.split("missing")[1]

    # An upstream whose page lies about the bytes: refused, nothing written, whether pip
    # sees it while resolving (it downloads the wheel) or relforge does (pip read only the
    # PEP 658 metadata, so relforge's own download is the first to read the wheel's bytes).
    paths = (("liar", False, "do not match"), ("liar-658", True, "the bytes have sha256"))
    for name, metadata, message in paths:
        root = upstream_index(tmp_path / name, tamper="rfdep-c", metadata=metadata)
        liar = static_server(root) + "/simple/"
        refused = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", liar,
                      "--execute")  # fmt: skip
        assert refused.code == 5, refused.out + refused.err
        assert message in refused.err and not list((store / CPU).glob("rfdep_c-*"))

    # An upstream without hashes: nothing is mirrored unverified.
    bare = static_server(upstream_index(tmp_path / "bare", hashes=False)) + "/simple/"
    unhashed = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", bare)
    assert unhashed.code == 5 and "no sha256" in unhashed.err, unhashed.out + unhashed.err

    # An upstream that cannot be reached is an environment fault (exit 6), not "missing".
    down = f"http://user:secret@127.0.0.1:{free_port()}/simple/"
    fault = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", down)
    assert fault.code == 6, fault.out + fault.err
    assert "cannot reach" in fault.err and "secret" not in fault.err + fault.out

    # The honest upstream restores the closure.
    fixed = run("deps", "mirror", matrix, "--channel", "test", "--upstream-index", upstream,
                "--execute")  # fmt: skip
    assert fixed.code == 0, fixed.out + fixed.err
    assert run("deps", "check", matrix, "--channel", "test").code == 0
    shutil.rmtree(tmp_path / "dist")


def test_mirror_and_check_a_channel_in_s3(
    run: Run,
    tmp_path: Path,
    s3: S3,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    """The same closure in an S3 store (moto): check serves the bucket's objects to pip."""
    monkeypatch.chdir(tmp_path)
    publishing = f"publishing:\n  store: s3://{s3.bucket}/dl\n  s3_endpoint_url: {s3.endpoint}\n"
    matrix = publish_rfdemo(run, tmp_path, publishing)

    missing = run("deps", "check", str(matrix), "--channel", "test")
    assert missing.code == 4 and "missing rfdep-a" in missing.err, missing.out + missing.err
    upstream = static_server(upstream_index(tmp_path / "upstream")) + "/simple/"
    done = run("deps", "mirror", str(matrix), "--channel", "test", "--upstream-index", upstream,
               "--execute")  # fmt: skip
    assert done.code == 0, done.out + done.err
    client: Any = s3.client()
    record = client.get_object(Bucket=s3.bucket, Key="dl/relforge/deps/whl/test/cpu.json")
    assert len(json.loads(record["Body"].read())["files"]) == 3
    ok = run("deps", "check", str(matrix), "--channel", "test")
    assert ok.code == 0, ok.out + ok.err
    index = f"{s3.endpoint}/{s3.bucket}/dl/whl/test/cpu/"
    assert install("pip", sys.executable, tmp_path / "venv", index, "rfdemo") == "rfdep-c"


def test_a_killed_mirror_finishes_on_rerun(
    run: Run,
    tmp_path: Path,
    s3: S3,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
) -> None:
    monkeypatch.chdir(tmp_path)
    publishing = f"publishing:\n  store: s3://{s3.bucket}/dl\n  s3_endpoint_url: {s3.endpoint}\n"
    matrix = publish_rfdemo(run, tmp_path, publishing)
    upstream = static_server(upstream_index(tmp_path / "upstream")) + "/simple/"

    args = ["deps", "mirror", str(matrix), "--channel", "test",
            "--upstream-index", upstream, "--execute", "--workers", "1"]  # fmt: skip
    argv = [sys.executable, "-m", "relforge", *args]
    paced = [*paced_relforge(transfer_delay=0.5), *args]
    proc = subprocess.Popen(paced, cwd=tmp_path, stdout=subprocess.PIPE)
    journal = tmp_path / ".relforge" / "journal"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        done = [
            ln for p in journal.glob("deps-mirror-*.jsonl") for ln in p.read_text().splitlines()
        ]
        if sum('"done"' in ln for ln in done) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the mirror finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    client: Any = s3.client()
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket)["Contents"]}
    assert "dl/relforge/deps/whl/test/cpu.json" not in keys  # recorded only after the copies
    assert 2 <= sum(k.startswith("dl/whl/test/cpu/rfdep") for k in keys) < 6

    resumed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    ok = run("deps", "check", str(matrix), "--channel", "test")
    assert ok.code == 0, ok.out + ok.err
    record = client.get_object(Bucket=s3.bucket, Key="dl/relforge/deps/whl/test/cpu.json")
    assert len(json.loads(record["Body"].read())["files"]) == 3


def _relforge_with_pip(tmp_path: Path, version: str) -> Path:
    """A venv whose own pip is `version`, which imports relforge (and its dependencies) from
    this environment through a .pth file that comes after the venv's own site-packages."""
    venv = tmp_path / f"pip-{version}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check", f"pip=={version}"],
        check=True, capture_output=True,
    )  # fmt: skip
    ours = [p for p in sys.path if p.endswith("site-packages")]
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "relforge-test.pth").write_text("\n".join([*ours, str(REPO / "src")]) + "\n")
    return python


@pytest.mark.parametrize("pip_version", ["22.1.2", "22.2", "23.2.1"])
def test_mirror_with_an_older_pip(
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    static_server: Callable[[Path], str],
    pip_version: str,
) -> None:
    """pip 22.2 to 23.2 take --platform/--abi only with --target (else "Can not use any
    platform or abi specific options unless installing via '--target'", which relforge
    reported as the upstream lacking the dependency); 22.2's report has `hash`, no
    `hashes`.  pip before 22.2 has no `install --dry-run --report`: it says so, exit 6."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    matrix = publish_rfdemo(run, tmp_path, f"publishing:\n  store: file://{store}\n")
    upstream = static_server(upstream_index(tmp_path / "upstream")) + "/simple/"
    python = _relforge_with_pip(tmp_path, pip_version)
    argv = [str(python), "-m", "relforge", "deps", "mirror", str(matrix), "--channel", "test",
            "--upstream-index", upstream, "--execute"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env)
    if pip_version == "22.1.2":
        assert done.returncode == 6, done.stdout + done.stderr
        assert f"pip {pip_version} (of {python})" in done.stderr
        assert "came in pip 22.2" in done.stderr and "pip install --upgrade 'pip>=22.2'" in (
            done.stderr
        )
        assert "upstream index must hold" not in done.stderr
        assert not (store / "relforge" / "deps").exists()
        return
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((store / "relforge" / "deps" / "whl/test/cpu.json").read_text())
    for f in record["files"]:
        data = (store / "whl/test/cpu" / f["filename"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert [f["name"] for f in record["files"]] == ["rfdep-a", "rfdep-b", "rfdep-c"]
