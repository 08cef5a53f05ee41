"""Runtime validation: install a wheel into a fresh venv with the cell's Python and run it.

The venv is made without pip (fast); the host's pip installs into it with `--python`, always
`--isolated` so no user or machine pip configuration (extra indexes, find-links) leaks in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from relforge.builders.depwheels import cached_folders
from relforge.interpreters import find_interpreter
from relforge.manifest import Verdict
from relforge.matrix.cell import Cell
from relforge.validate.checks import BUILD_INFO, GPU, INSTALL, SMOKE
from relforge.validate.versionattr import VERSION_ATTRIBUTE, check_version_attribute

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
    index_url: str | None = None
    smoke: tuple[str, ...] = ()
    timeout: float = 900.0


def import_name(project: str) -> str:
    return canonicalize_name(project).replace("-", "_")


def gpu_present() -> tuple[bool, str]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False, "no GPU on this machine (nvidia-smi not found)"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"no GPU on this machine (nvidia-smi: {exc})"
    if out.returncode != 0 or "GPU " not in out.stdout:
        return False, "no GPU on this machine (nvidia-smi lists none)"
    return True, out.stdout.strip().splitlines()[0]


def run_runtime(req: RuntimeRequest) -> list[Verdict]:
    """RF-R001…R004 for one cell's wheel."""
    cell = req.cell
    later = (SMOKE, VERSION_ATTRIBUTE, BUILD_INFO, GPU)
    found = find_interpreter(cell.python or "") if cell.python else None
    if found is None:
        reason = f"no Python {cell.python} on this machine"
        return [INSTALL.verdict("skip", reason), *(c.verdict("skip", reason) for c in later)]
    venv = req.workdir / f"venv-{cell.id}"
    shutil.rmtree(venv, ignore_errors=True)
    python = found.executable
    made = _run([python, "-m", "venv", "--without-pip", str(venv)], req.workdir, {}, 300)
    venv_python = venv / "bin" / "python"
    if made.returncode != 0:
        return _install_failed(f"venv with {python}: {_tail(made)}")
    # --no-compile: the venv lives for one smoke test; byte-compiling every module of the wheel
    # and its dependencies up front (thousands for torch) only costs CPU
    install = [
        sys.executable, "-m", "pip", "--python", str(venv_python), "--isolated",
        "--disable-pip-version-check", "--no-input", "install", "--no-cache-dir", "--no-compile",
    ]  # fmt: skip
    if req.index_url:
        install += [
            "--index-url",
            req.index_url,
            f"{canonicalize_name(req.project)}=={cell.version}",
        ]
        how = f"from {req.index_url}"
    elif cached_folders(cell):  # the dependency the wheel was built against, from the build
        links = [a for folder in cached_folders(cell) for a in ("--find-links", str(folder))]
        install += ["--no-index", *links, str(req.wheel.resolve())]
        how = "from the file, with its dependency axes' wheels (no index given)"
    else:
        install += ["--no-index", "--no-deps", str(req.wheel.resolve())]
        how = "from the file, without dependencies (no index given)"
    done = _run(install, req.workdir, {}, req.timeout)
    if done.returncode != 0:
        return _install_failed(f"pip install {how} failed: {_tail(done)}")
    verdicts = [INSTALL.verdict("pass", f"installed {how} with Python {cell.python}")]
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "RELFORGE_CELL_ID": cell.id,
        "RELFORGE_CELL": json.dumps(cell.to_json()),
    }
    module = import_name(req.project)
    smoke = list(req.smoke) or ["python", "-c", f"import {module}; print({module}.__version__)"]
    if smoke[0] in ("python", "python3"):
        smoke[0] = str(venv_python)
    ran = _run(smoke, req.workdir, env, req.timeout)
    if ran.returncode == 0:
        verdicts.append(SMOKE.verdict("pass", (ran.stdout.strip().splitlines() or [""])[-1][:200]))
    else:
        verdicts.append(SMOKE.verdict("fail", f"exit {ran.returncode}: {_tail(ran)}"))
    verdicts.append(
        check_version_attribute(
            lambda argv: _outcome(_run(argv, req.workdir, env, 300)),
            str(venv_python),
            req.wheel,
            module,
        )
    )
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
        verdicts.append(BUILD_INFO.verdict("fail", f"import failed: {_tail(info_run)}"))
    elif not isinstance(info, dict):
        verdicts.append(BUILD_INFO.verdict("skip", f"{module} has no build_info()"))
    else:
        problems = build_info_problems(info, cell)
        verdicts.append(
            BUILD_INFO.verdict("fail", "; ".join(problems))
            if problems
            else BUILD_INFO.verdict("pass", ", ".join(f"{k}={v}" for k, v in sorted(info.items())))
        )
    verdicts.append(_gpu_verdict(cell, info if isinstance(info, dict) else None))
    return verdicts


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


def _gpu_verdict(cell: Cell, info: Mapping[str, Any] | None) -> Verdict:
    if cell.accelerator != "cuda":
        return GPU.verdict("skip", f"a {cell.accelerator} cell")
    present, detail = gpu_present()
    if not present:
        return GPU.verdict("skip", detail)
    if info is None:
        return GPU.verdict("skip", f"{detail}, but the module has no build_info() to ask")
    problems = []
    if info.get("cuda_available") is False or info.get("device_count") == 0:
        problems.append("build_info() reports no usable CUDA device")
    if cell.cudnn_version and info.get("cudnn_version") not in (None, cell.cudnn_version):
        problems.append(f"cuDNN {info.get('cudnn_version')}, the cell says {cell.cudnn_version}")
    if problems:
        return GPU.verdict("fail", "; ".join(problems))
    return GPU.verdict("pass", detail)


def _install_failed(message: str) -> list[Verdict]:
    return [
        INSTALL.verdict("fail", message),
        *(c.verdict("skip", "not installed") for c in (SMOKE, VERSION_ATTRIBUTE, BUILD_INFO, GPU)),
    ]


def _run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON")) and k not in ("VIRTUAL_ENV",)
    }
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        return subprocess.run(
            list(argv),
            cwd=cwd,
            env={**base, **env},
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
