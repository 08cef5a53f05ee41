"""A new user's path for a project of tests/realprojects.py, from `relforge init` to its wheel
installed from the channel's index: the tests assert on each step
(tests/integration/test_real_projects.py, test_build_docker.py), benchmarks/bench_real_projects.py
times it."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from relforge.axiswheels import cached_folders
from relforge.interpreters import find_interpreter
from relforge.matrix.expand import expand_cells
from relforge.matrix.load import load_matrix
from relforge.pipcommand import pip_for
from relforge.wheelformat import metadata_headers
from tests.realprojects import Kind, write_project


def host_platform_tag() -> str:
    """The manylinux tag of this machine's glibc: what its compilers' output needs."""
    major, minor = platform.libc_ver()[1].split(".")[:2]
    return f"manylinux_{major}_{minor}_{platform.machine()}"


def adopt(
    matrix: Path,
    kind: Kind,
    *,
    image: str | None = None,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Check what `relforge init` read for `kind` and apply the README's one edit: the platform
    tag of the glibc that builds (C++ from a recent g++ needs GLIBC_2.32/GLIBCXX_3.4.29), the
    Python range of a project that states it in setup.py only and the dependency axis of a
    project built against torch or numpy are what init wrote; for Docker builds here the
    builder image is the one made by `relforge builder-image` (no registry is reachable)."""
    data: dict[str, Any] = yaml.safe_load(matrix.read_text(encoding="utf-8"))
    [release] = data["releases"].values()
    for name, values in release["platforms"].items():
        if name == "linux-x86_64":
            assert values["platform_tag"] == host_platform_tag()
    assert release.get("requires_python") == kind.requires_python
    assert release.get("axes", {}) == kind.axes
    if image is not None:
        for accelerator in release["accelerators"].values():
            for platform in accelerator.get("platforms", {}).values():
                platform["image"] = image
    if edit is not None:
        edit(data)
    matrix.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return data


class CliResult(Protocol):
    @property
    def code(self) -> int: ...
    @property
    def out(self) -> str: ...
    @property
    def err(self) -> str: ...


Relforge = Callable[..., CliResult]  # relforge ARGS… run in the project's folder
SELECT = ("--select", "python=3.11,accelerator=cpu")  # the Python the local torch wheel is for


@dataclass(frozen=True, kw_only=True)
class Adoption:
    """What one project went through, from `relforge init` to its wheel installed from the
    channel's index."""

    matrix: dict[str, Any]  # as built from (after the README's edits)
    release: str
    cell: dict[str, Any]  # `relforge build --format json`'s cell
    verdicts: dict[str, str]  # check → status of `relforge validate --runtime`
    messages: dict[str, str]  # check → message
    log: str  # the cell's build log
    installed: str  # what the probe printed in the venv the wheel was installed into
    seconds: dict[str, float]  # per step, and "total"


def init_to_installed(
    kind: Kind, root: Path, relforge: Relforge, *, builder: str, image: str | None = None
) -> Adoption:
    """The new user's path for the project in `root` (the current directory): `relforge init`,
    the README's matrix edits, build (no build command of ours), validate statically and at
    runtime, publish to the nightly channel of the local store, pip install from its index into
    a fresh venv (dependencies from the axes' wheels) and call the extension."""
    seconds: dict[str, float] = {}
    start = time.monotonic()

    def step(name: str, *args: str) -> CliResult:
        began = time.monotonic()
        done = relforge(*args)
        seconds[name] = round(time.monotonic() - began, 1)
        assert done.code == 0, f"relforge {name}: exit {done.code}\n{done.err}\n{done.out}"
        return done

    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    step("init", "init")
    [matrix] = (root / "matrix").glob("*.yaml")
    data = adopt(matrix, kind, image=image)
    [release] = data["releases"]
    where = (str(matrix), "--release", release, "--channel", "nightly")
    select = ("--select", kind.select)
    built = step("build", "build", *where, "--builder", builder, *select, "--format", "json")
    [cell] = json.loads(built.out)["cells"]
    manifest = "dist/relforge-manifest.json"
    checked = step("validate", "validate", *where, "--manifest", manifest, *select, "--runtime",
                   "--format", "json")  # fmt: skip
    [report] = [a for a in json.loads(checked.out)["artifacts"] if a["cell_id"] == cell["cell"]]
    step("publish", "publish", str(matrix), "--channel", "nightly", "--manifest", manifest,
         "--partial", "--execute")  # fmt: skip
    began = time.monotonic()
    installed = install_from_channel(kind, root, matrix, release, cell["cell"])
    seconds["install"] = round(time.monotonic() - began, 1)
    seconds["total"] = round(time.monotonic() - start, 1)
    return Adoption(
        matrix=data,
        release=release,
        cell=cell,
        verdicts={v["check"]: v["status"] for v in report["verdicts"]},
        messages={v["check"]: v["message"] for v in report["verdicts"]},
        log=(root / ".relforge" / "logs" / f"{cell['cell']}.log").read_text(encoding="utf-8"),
        installed=installed,
        seconds=seconds,
    )


def install_from_channel(kind: Kind, root: Path, matrix: Path, release: str, cell_id: str) -> str:
    """pip install the project from the nightly channel's index of the local store (only that
    index; its dependencies from the wheels the cell's axes were built with) and run the probe."""
    cells = {c.id: c for c in expand_cells(load_matrix(matrix), release, channel="nightly")}
    python = find_interpreter("3.11")
    assert python is not None
    venv = root / ".relforge" / "venv-installed"
    subprocess.run([python.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    index = (root / ".relforge" / "store" / "whl" / "nightly" / "cpu").as_uri() + "/"
    links = [a for folder in cached_folders(cells[cell_id]) for a in ("--find-links", str(folder))]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    subprocess.run(
        [*pip_for(venv / "bin" / "python"), "--isolated",
         "install", "--quiet", "--no-cache-dir", "--no-compile", "--index-url", index, *links,
         kind.name],
        check=True, env=env,
    )  # fmt: skip
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", kind.probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=venv,
    )
    return probe.stdout.strip().splitlines()[-1]


def check_adoption(
    kind: Kind,
    tmp_path: Path,
    run: Relforge,
    monkeypatch: pytest.MonkeyPatch,
    builder: str,
    image: str | None = None,
) -> str:
    """Walk the project from init to installed; assert what holds for every kind; the log."""
    root = write_project(kind, tmp_path)
    monkeypatch.chdir(root)
    done = init_to_installed(kind, root, run, builder=builder, image=image)
    assert done.matrix["project"]["build"]["command"] == []  # the PEP 517 build, no script
    assert done.cell["status"] == "built" and done.cell["builder"] == builder
    version = done.cell["version"]
    wheel = Path(done.cell["file"])
    assert metadata_headers(wheel)["Version"] == version
    assert done.verdicts["RF-V043"] == "pass", done.messages["RF-V043"]  # no build-time RUNPATH
    for check in ("RF-V041", "RF-V046", "RF-R001", "RF-R002"):
        assert done.verdicts[check] == "pass", (check, done.messages[check])
    assert not [c for c, s in done.verdicts.items() if s == "fail"], done.messages
    assert done.verdicts["RF-R005"] == kind.version_attribute, done.messages["RF-R005"]
    assert done.installed == kind.expected
    return done.log
