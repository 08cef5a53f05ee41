"""Runtime validation: install a wheel into a fresh venv with the cell's Python and run it.

The venv is made without pip (fast); the host's pip installs into it with `--python`, always
`--isolated` so no user or machine pip configuration (extra indexes, find-links) leaks in.

The project under test is always installed from its file (the bytes validated, downloaded first
when they came from an index), never by name: an index given for its dependencies — an
upstream such as PyPI, the channel's mirrored closure (`relforge deps mirror`), the index
being validated — cannot substitute another build of it.  With no index, the dependency
axes' wheels the build used are the only source (else none are installed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from relforge.axiswheels import cached_folders, fetched_folders
from relforge.interpreters import find_interpreter
from relforge.manifest import ProvenGpu, Verdict, VerdictStatus
from relforge.matrix.cell import Cell
from relforge.pipcommand import pip_for
from relforge.validate.devicecode import DeviceCode
from relforge.validate.gpus import Gpu, driver_problem, predict, query_gpus
from relforge.validate.runtimedeps import (
    PROBE,
    Sources,
    declared_requirements,
    explain_missing,
    install_sources,
    left_out,
    left_out_message,
    reasons,
)
from relforge.validate.versionattr import VERSION_ATTRIBUTE, check_version_attribute
from relforge.validate.wheelchecks import BUILD_INFO, GPU, GPU_SMOKE, INSTALL, SMOKE

_BUILD_INFO = (
    "import json, {module}\n"
    "f = getattr({module}, 'build_info', None)\n"
    "print(json.dumps(f() if callable(f) else None, default=str))\n"
)


@dataclass(frozen=True, kw_only=True)
class RuntimeRequest:
    cell: Cell
    wheel: Path
    project: str
    workdir: Path
    module: str = ""  # the module the checks import (project.import_name); "" = from `project`
    dependency_index: str | None = None  # PEP 503 index of the wheel's dependencies
    dependency_source: str = ""  # what that index is, for messages
    smoke: tuple[str, ...] = ()
    timeout: float = 900.0
    device: Mapping[str, DeviceCode] = dataclasses.field(default_factory=dict)
    gpu_smoke: tuple[str, ...] = ()
    gpu_smoke_timeout: float = 60.0
    require_gpu: bool = False  # a CUDA cell on a machine without a GPU fails instead of skipping
    cache_root: Path | None = None  # of the dependency axes' wheels (default: the user's cache)


@dataclass(frozen=True)
class RuntimeResult:
    """The runtime verdicts of one cell's wheel, and the GPUs its GPU smoke ran a kernel on."""

    verdicts: list[Verdict]
    proven: tuple[ProvenGpu, ...] = ()


def import_name(project: str, module: str = "") -> str:
    """The module the runtime checks import: `module` (project.import_name) when set, else the
    distribution name lowercased with - and . as _."""
    return module or canonicalize_name(project).replace("-", "_")


def run_runtime(req: RuntimeRequest) -> RuntimeResult:
    """RF-R001…R006 for one cell's wheel; an abi3 wheel is installed and run with every
    Python it serves that this machine has, one verdict per check for all of them."""
    cell = req.cell
    gpus, no_gpu = query_gpus() if cell.accelerator == "cuda" else ((), "")
    if not cell.serves_python:
        verdicts, proven = _run_with(req, gpus, no_gpu)
        return RuntimeResult(verdicts, proven)
    runs: dict[str, list[Verdict]] = {}
    proofs: list[ProvenGpu] = []
    for python in cell.pythons:
        if find_interpreter(python) is not None:
            one = dataclasses.replace(req, cell=cell.replace(python=python))
            runs[python], proven = _run_with(one, gpus, no_gpu)
            proofs += proven
    absent = [p for p in cell.pythons if p not in runs]
    if not runs:
        reason = f"no Python {', '.join(absent)} on this machine"
        return RuntimeResult([c.verdict("skip", reason) for c in (INSTALL, *_LATER)])
    return RuntimeResult(merge_runs(runs, absent), tuple(dict.fromkeys(proofs)))


def merge_runs(runs: Mapping[str, Sequence[Verdict]], absent: Sequence[str]) -> list[Verdict]:
    """One verdict per check over the runs of several Pythons: failed when one failed, else
    warned when one warned (naming each, and those it passed with), else passed when one
    passed, else skipped; the Pythons not run are named."""
    out = []
    checks = list(dict.fromkeys(v.check for verdicts in runs.values() for v in verdicts))
    for check in checks:
        got = {p: next(v for v in vs if v.check == check) for p, vs in runs.items()}
        failed = [f"Python {p}: {v.message}" for p, v in got.items() if v.status == "fail"]
        warned = [f"Python {p}: {v.message}" for p, v in got.items() if v.status == "warn"]
        passed = [p for p, v in got.items() if v.status == "pass"]
        status: VerdictStatus = (
            "fail" if failed else "warn" if warned else "pass" if passed else "skip"
        )
        if failed or warned:
            message = "; ".join(failed + warned)
            if passed:
                message += f"; passed with Python {', '.join(passed)}"
        elif passed:
            first, every = f"Python {passed[0]}", f"Python {', '.join(passed)}"
            said = got[passed[0]].message
            message = said.replace(first, every) if first in said else f"{every}: {said}"
        else:
            message = next(iter(got.values())).message
        if absent:
            message += f" (not on this machine: Python {', '.join(absent)})"
        out.append(Verdict(check=check, status=status, message=message))
    return out


_LATER = (SMOKE, VERSION_ATTRIBUTE, BUILD_INFO, GPU, GPU_SMOKE)


def _run_with(
    req: RuntimeRequest, gpus: Sequence[Gpu], no_gpu: str
) -> tuple[list[Verdict], tuple[ProvenGpu, ...]]:
    """The runtime checks with the cell's Python, and the GPUs a kernel ran on."""
    cell = req.cell
    found = find_interpreter(cell.python or "") if cell.python else None
    if found is None:
        reason = f"no Python {cell.python} on this machine"
        return [INSTALL.verdict("skip", reason), *(c.verdict("skip", reason) for c in _LATER)], ()
    venv = req.workdir / f"venv-{cell.id}-py{cell.python}"
    shutil.rmtree(venv, ignore_errors=True)
    python = found.executable
    made = _run([python, "-m", "venv", "--without-pip", str(venv)], req.workdir, {}, 300)
    venv_python = venv / "bin" / "python"
    if made.returncode != 0:
        return _install_failed(f"venv with {python}: {_tail(made)}"), ()
    folders, no_axis_wheels = axis_folders(req)
    sources = install_sources(
        req.wheel, req.dependency_index, req.dependency_source, folders, no_axis_wheels
    )
    installed = _install(req, venv_python, sources)
    if isinstance(installed, str):
        return _install_failed(installed), ()
    install_verdict, missing = installed
    verdicts = [install_verdict]
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "RELFORGE_CELL_ID": cell.id,
        "RELFORGE_CELL": json.dumps(cell.to_json()),
    }
    module = import_name(req.project, req.module)

    def explained(message: str) -> str:
        return explain_missing(message, missing, module)

    smoke = list(req.smoke) or ["python", "-c", f"import {module}"]
    if smoke[0] in ("python", "python3"):
        smoke[0] = str(venv_python)
    ran = _run(smoke, req.workdir, env, req.timeout)
    if ran.returncode == 0:
        said = (ran.stdout.strip().splitlines() or [""])[-1][:200]
        if not said:
            said = f"import {module} succeeded" if not req.smoke else "exit 0, no output"
        verdicts.append(SMOKE.verdict("pass", said))
    else:
        verdicts.append(SMOKE.verdict("fail", explained(f"exit {ran.returncode}: {_tail(ran)}")))
    version = check_version_attribute(
        lambda argv: _outcome(_run(argv, req.workdir, env, 300)),
        str(venv_python),
        req.wheel,
        module,
    )
    verdicts.append(dataclasses.replace(version, message=explained(version.message)))
    info_run = _run(
        [str(venv_python), "-c", _BUILD_INFO.format(module=module)], req.workdir, env, 300
    )
    info: Any = None
    if info_run.returncode == 0:
        try:
            info = json.loads(info_run.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            info = None
    if info_run.returncode != 0:
        failed = f"import {module} failed: {_tail(info_run)}"
        verdicts.append(BUILD_INFO.verdict("fail", explained(failed)))
    elif not isinstance(info, dict):
        verdicts.append(BUILD_INFO.verdict("skip", f"{module} has no build_info()"))
    else:
        problems = build_info_problems(info, cell)
        verdicts.append(
            BUILD_INFO.verdict("fail", "; ".join(problems))
            if problems
            else BUILD_INFO.verdict("pass", ", ".join(f"{k}={v}" for k, v in sorted(info.items())))
        )
    verdicts.append(_gpu_verdict(req, info if isinstance(info, dict) else None, gpus, no_gpu))
    smoke_verdict, proven = _gpu_smoke(req, env, str(venv_python), gpus, no_gpu)
    verdicts.append(smoke_verdict)
    return verdicts, proven


def axis_folders(req: RuntimeRequest) -> tuple[list[Path], str]:
    """The wheel folders of the cell's dependency axes for the cell's Python: the build's, or
    fetched now (an abi3 cell's build fetched them for its own Python only); else ([], why)."""
    cell = req.cell
    if not cell.axis_install:
        return [], ""
    cached = cached_folders(cell, req.cache_root)
    if cached:
        return cached, ""

    def fetch(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        done = _run(argv, cwd, env, req.timeout, inherit=False)
        if done.returncode != 0:
            raise _FetchFailed(_tail(done, 3))

    try:
        return fetched_folders(cell, run=fetch, env=os.environ, cache_root=req.cache_root), ""
    except _FetchFailed as exc:
        return [], (
            f"the dependency axes' wheels ({', '.join(_axis_requirements(cell))}) for Python "
            f"{cell.python} could not be fetched: {exc}"
        )


class _FetchFailed(Exception):
    """pip download of a dependency axis's wheels failed."""


def _axis_requirements(cell: Cell) -> list[str]:
    return [r for install in cell.axis_install.values() for r in install]


def _install(
    req: RuntimeRequest, venv_python: Path, sources: Sources
) -> tuple[Verdict, list[str]] | str:
    """RF-R001's verdict and the requirements left out, or why the wheel did not install.  When
    pip cannot install the wheel with its dependencies, the wheel alone is installed and then
    each requirement on its own: those the sources lack are left out, and RF-R001 warns."""
    cell = req.cell
    pip = [
        *pip_for(venv_python), "--isolated",
        "--disable-pip-version-check", "--no-input", "install", "--no-cache-dir", "--no-compile",
    ]  # fmt: skip
    # --no-compile: the venv lives for one smoke test; byte-compiling every module of the wheel
    # and its dependencies up front (thousands for torch) only costs CPU
    wheel = str(req.wheel.resolve())
    how = f" {sources.how}" if sources.how else ""
    needs = declared_requirements(req.wheel)
    done = _run([*pip, *sources.options, wheel], req.workdir, {}, req.timeout)
    failures: dict[str, str] = {}
    if done.returncode != 0:
        if not needs or "--no-deps" in sources.options:
            return f"pip install of the file{how} failed: {_tail(done)}"
        alone = _run([*pip, "--no-index", "--no-deps", wheel], req.workdir, {}, req.timeout)
        if alone.returncode != 0:  # the wheel itself does not install: not its dependencies
            return f"pip install of the file{how} failed: {_tail(done)}"
        for need in needs:
            one = _run([*pip, *sources.options, need], req.workdir, {}, req.timeout)
            if one.returncode != 0:
                failures[need] = _tail(one, 1)
    probe = _run([str(venv_python), "-c", PROBE], req.workdir, {}, 300)
    missing = left_out(needs, probe.stdout or "")
    installed = f"installed the file{how} with Python {cell.python}"
    if not missing:
        return INSTALL.verdict("pass", installed), []
    if sources.none_because:
        why = f"its dependencies ({', '.join(missing)}: {sources.none_because})"
    else:
        failed = reasons({r: failures.get(r, "not installed") for r in missing})
        source = req.dependency_source or req.dependency_index or "its dependency axes' wheels"
        why = f"{', '.join(missing)} (not installable from {source}: {failed})"
    return INSTALL.verdict("warn", left_out_message(installed, why)), missing


def build_info_problems(info: Mapping[str, Any], cell: Cell) -> list[str]:
    """Where build_info() disagrees with the cell (keys it does not report are not checked)."""
    expected: dict[str, Any] = {
        "variant": cell.variant,
        "cxx11_abi": cell.cxx11_abi,
        "accelerator": cell.accelerator,
        "python": cell.python,
    }
    problems = [
        f"{key} is {info[key]!r}, the cell says {want!r}"
        for key, want in expected.items()
        if key in info and info[key] != want
    ]
    # the accelerator's version under any of its usual names (`cuda` like torch.version.cuda)
    version = next(
        (info[k] for k in ("accelerator_version", "cuda_version", "cuda") if info.get(k)), None
    )
    if (
        version
        and cell.accelerator_version
        and not str(version).startswith(cell.accelerator_version)
    ):
        problems.append(f"accelerator version {version}, the cell says {cell.accelerator_version}")
    return problems


def _gpu_verdict(
    req: RuntimeRequest, info: Mapping[str, Any] | None, gpus: Sequence[Gpu], no_gpu: str
) -> Verdict:
    """RF-R004: decided before anything runs on the GPU, from what the binaries carry, each
    GPU's compute capability and driver; then what build_info() says of the device."""
    cell = req.cell
    if cell.accelerator != "cuda":
        return GPU.verdict("skip", f"a {cell.accelerator} cell")
    if not gpus:
        return GPU.verdict("fail" if req.require_gpu else "skip", _no_gpu(no_gpu, req))
    problems: list[str] = []
    said: list[str] = []
    files = {path: code for path, code in req.device.items() if code.sass() or code.ptx()}
    if files:
        for prediction in predict(gpus, files):
            (said if prediction.ok else problems).append(prediction.message)
    else:
        said.append(f"{_gpu_names(gpus)}; no CUDA device code read to predict from (RF-V048)")
    if cell.accelerator_version:
        for driver in dict.fromkeys(g.driver for g in gpus):
            problem = driver_problem(driver, cell.accelerator_version)
            if problem:
                problems.append(problem)
    if info is not None:
        if info.get("cuda_available") is False or info.get("device_count") == 0:
            problems.append("build_info() reports no usable CUDA device")
        if cell.cudnn_version and info.get("cudnn_version") not in (None, cell.cudnn_version):
            problems.append(
                f"cuDNN {info.get('cudnn_version')}, the cell says {cell.cudnn_version}"
            )
    if problems:
        return GPU.verdict("fail", "; ".join(problems))
    return GPU.verdict("pass", "; ".join(said))


def _gpu_smoke(
    req: RuntimeRequest, env: Mapping[str, str], venv_python: str, gpus: Sequence[Gpu], no_gpu: str
) -> tuple[Verdict, tuple[ProvenGpu, ...]]:
    """RF-R006: the matrix's GPU smoke command, once per kind of GPU on the machine (pinned to
    one GPU of that kind with CUDA_VISIBLE_DEVICES), each bounded by its timeout."""
    cell = req.cell
    if cell.accelerator != "cuda":
        return GPU_SMOKE.verdict("skip", f"a {cell.accelerator} cell"), ()
    if not gpus:
        return GPU_SMOKE.verdict("fail" if req.require_gpu else "skip", _no_gpu(no_gpu, req)), ()
    kinds = list({(g.name, g.capability): g for g in gpus}.values())
    if not req.gpu_smoke:
        return GPU_SMOKE.verdict(
            "warn",
            f"no kernel ran on {_gpu_names(kinds)}: the matrix declares no gpu_smoke "
            "(project.build.gpu_smoke)",
        ), ()
    argv = list(req.gpu_smoke)
    if argv[0] in ("python", "python3"):
        argv[0] = venv_python
    ran, failed = [], []
    for gpu in kinds:
        pinned = {**env, "CUDA_VISIBLE_DEVICES": str(gpu.index)}
        code, output = run_bounded(argv, req.workdir, pinned, req.gpu_smoke_timeout)
        name = f"{gpu.name} ({gpu.sm})"
        if code is None:
            failed.append(f"hung on {name}: no exit within {req.gpu_smoke_timeout:g} s")
        elif code != 0:
            failed.append(f"exit {code} on {name}: {output}")
        else:
            ran.append((gpu, output))
    proven = tuple(ProvenGpu(name=g.name, sm=g.sm) for g, _ in ran)
    if failed:
        return GPU_SMOKE.verdict("fail", "; ".join(failed)), proven
    said = "; ".join(f"{g.name} ({g.sm}): {out}" if out else f"{g.name} ({g.sm})" for g, out in ran)
    return GPU_SMOKE.verdict("pass", f"a kernel ran on {said}"), proven


def _no_gpu(reason: str, req: RuntimeRequest) -> str:
    if req.require_gpu:
        return f"{reason}, and --require-gpu says this machine must have one"
    return reason


def _gpu_names(gpus: Sequence[Gpu]) -> str:
    return ", ".join(f"{g.name} ({g.sm})" for g in gpus)


def run_bounded(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> tuple[int | None, str]:
    """Run `argv` in a session of its own; (exit code, last output line), or (None, …) when it
    did not exit within `timeout` seconds (then the whole session is killed: a hung kernel's
    process and anything it started)."""
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=_child_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return 127, str(exc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, ""
    lines = [line for line in (out or "").strip().splitlines() if line.strip()]
    return proc.returncode, " | ".join(lines[-3:])[:300]


def _install_failed(message: str) -> list[Verdict]:
    return [
        INSTALL.verdict("fail", message),
        *(c.verdict("skip", "not installed") for c in _LATER),
    ]


def _child_env(env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without pip's, Python's or a venv's settings, plus `env`."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON")) and k not in ("VIRTUAL_ENV",)
    }
    return {**base, **env}


def _run(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    *,
    inherit: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` with this process's environment less pip's and Python's settings, plus `env`
    (with inherit=False: `env` alone)."""
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        return subprocess.run(
            list(argv),
            cwd=cwd,
            env=_child_env(env) if inherit else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(argv), 127, "", str(exc))


def _outcome(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout or "", done.stderr or ""


def _tail(done: subprocess.CompletedProcess[str], lines: int = 6) -> str:
    text = (done.stderr or done.stdout or "").strip().splitlines()
    return " | ".join(text[-lines:])
