"""A wheel build's requirements, gathered as a PEP 517 front end gathers them.

First [build-system].requires, less the distributions the cell's dependency axes install (the
axis decides which torch or numpy the extension is built against); then, for the PEP 517 build,
what the backend's `get_requires_for_build_wheel` adds (scikit-build-core asks for `cmake` and
`ninja` when the machine has none recent enough; old setuptools for `wheel`).  The backend is
asked by a script run with the build's own interpreter, in the source tree, after the static
requirements and the axes are installed (pep517_requires.py): on the host in the build venv,
in a container by in_container.sh.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from relforge.builders.control import BuildFailure, run_logged
from relforge.builders.inputs.projectfile import BuildSystem
from relforge.locations import user_cache_dir
from relforge.matrix.cell import Cell
from relforge.matrix.values import requirement_name

HOOK_SCRIPT = "pep517_requires.py"
LINK_SCRIPT = "link_env.py"
SPEC_FILE = "build-system.json"


def static_requirements(system: BuildSystem, cell: Cell) -> list[str]:
    """[build-system].requires without the distributions an axis of the cell installs."""
    axis_names = {_name(r) for install in cell.axis_install.values() for r in install}
    return [r for r in system.requires if _name(r) not in axis_names]


def write_control(folder: Path, system: BuildSystem | None) -> None:
    """Put the scripts a build runs with its own interpreter into `folder` (a copy: the relforge
    package's folder is no place to run them from), and for the PEP 517 build (`system`) the
    backend to ask."""
    folder.mkdir(parents=True, exist_ok=True)
    package = resources.files("relforge.builders.inputs")
    for script in (HOOK_SCRIPT, LINK_SCRIPT):
        (folder / script).write_text(package.joinpath(script).read_text("utf-8"), "utf-8")
    if system is not None:
        spec = {"backend": system.backend, "backend_path": list(system.backend_path)}
        (folder / SPEC_FILE).write_text(json.dumps(spec), encoding="utf-8")


def backend_requirements(
    python: Path,
    control: Path,
    src: Path,
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
) -> list[str]:
    """What the backend asks for on top of the static requirements that `python`'s
    environment does not meet (run in the source tree `src`)."""
    unmet = control / "unmet.txt"
    argv = [str(python), str(control / HOOK_SCRIPT), str(control / SPEC_FILE), str(unmet)]
    run_logged(
        argv,
        cwd=src,
        env=env,
        log=log,
        deadline=deadline,
        what="asking the build backend for its requirements (get_requires_for_build_wheel)",
    )
    return read_requirements(unmet)


def linker_env(python: Path, control: Path, *, env: Mapping[str, str], log: Path) -> dict[str, str]:
    """LDSHARED/LDCXXSHARED of `python` without rpath entries into its prefix (link_env.py)."""
    done = subprocess.run(
        [str(python), str(control / LINK_SCRIPT)],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    try:
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, dict):
        raise BuildFailure(f"{python} cannot report its linker commands: {done.stderr.strip()}")
    with log.open("a", encoding="utf-8") as fh:
        fh.writelines(
            f"# {k}={v} (the interpreter's, without its rpath)\n" for k, v in found.items()
        )
    return {str(k): str(v) for k, v in found.items()}


def remembered(key: Sequence[str]) -> list[str]:
    """What a backend asked for in an earlier container build of the same kind (`key`: the
    image, Python, platform, backend and static requirements), fetched before the next one."""
    return read_requirements(_memory(key))


def remember(key: Sequence[str], requirements: Sequence[str]) -> None:
    path = _memory(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    tmp.replace(path)


def _memory(key: Sequence[str]) -> Path:
    digest = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:20]
    return user_cache_dir() / "build-requires" / f"{digest}.txt"


def read_requirements(path: Path) -> list[str]:
    """One requirement a line, as pep517_requires.py and in_container.sh write them."""
    if not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def merged(*groups: Sequence[str]) -> list[str]:
    """The requirements of every group, each once, in order."""
    return list(dict.fromkeys(r for group in groups for r in group))


def _name(requirement: str) -> str:
    try:
        return requirement_name(requirement)
    except ValueError:  # pip reports a malformed requirement when it installs it
        return requirement
