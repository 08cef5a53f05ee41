"""A fresh virtual environment per host build, holding the project's build requirements.

The requirements (relforge.builders.inputs.buildreqs, plus pip to drive the default build) are
resolved once per interpreter into a read-only layer under the user cache, from a wheelhouse there
(filled from the configured indexes only when it lacks something).  Each cell's venv gets the
layer's files hard-linked into its site-packages: measured on this 2-core machine, a venv with
ensurepip takes 3–5 s and a pip install of the requirements 2–5 s, the linked layer ~0.2 s.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from relforge.builders.control import BuildFailure, run_logged
from relforge.cachedir import locked, made_once
from relforge.interpreters import Interpreter
from relforge.locations import user_cache_dir
from relforge.pipcommand import pip_for

FRONTEND = ["pip"]  # drives the default PEP 517 build inside the venv
_QUIET = ["--disable-pip-version-check", "--no-input"]


def make_venv(
    interpreter: Interpreter,
    venv: Path,
    requirements: list[str],
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
) -> Path:
    """Create `venv` with `requirements` (and pip) installed; returns its python."""
    wanted = sorted({*requirements, *FRONTEND})
    python = venv / "bin" / "python"
    if importlib.util.find_spec("pip") is None:  # no pip of our own: the slow, plain way
        create = [interpreter.executable, "-m", "venv", str(venv)]
        run_logged(create, cwd=venv.parent, env=env, log=log, deadline=deadline, what="venv")
        _pip_install([str(python), "-m", "pip"], ["install", *wanted], env, log, deadline)
        return python
    create = [interpreter.executable, "-m", "venv", "--without-pip", str(venv)]
    run_logged(create, cwd=venv.parent, env=env, log=log, deadline=deadline, what="venv")
    layer = _layer(interpreter, python, wanted, env=env, log=log, deadline=deadline)
    tag = f"python{'.'.join(interpreter.version.split('.')[:2])}"
    site = venv / "lib" / f"{tag}{'t' if interpreter.free_threaded else ''}" / "site-packages"
    _link_tree(layer, site)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"# build requirements linked from {layer}\n")
    return python


def install_into(
    python: Path, requirements: list[str], *, env: Mapping[str, str], log: Path, deadline: float
) -> None:
    """pip install `requirements` into the venv of `python` (what the build backend asks for
    on top of the layer: pip resolves them against what the venv holds, axes included)."""
    pip = pip_for(python)
    _pip_install(pip, ["install", "--no-compile", *requirements], env, log, deadline)


def requirements_layer(
    interpreter: Interpreter,
    requirements: list[str],
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
) -> Path:
    """A cached `pip install --target` of `requirements` for `interpreter` (offline from the
    wheelhouse, which is filled from the configured indexes when it lacks something)."""
    python = Path(interpreter.executable)
    return _layer(
        interpreter, python, sorted(set(requirements)), env=env, log=log, deadline=deadline
    )


def _layer(
    interpreter: Interpreter,
    python: Path,
    wanted: list[str],
    *,
    env: Mapping[str, str],
    log: Path,
    deadline: float,
) -> Path:
    """The cached `pip install --target` of `wanted` for this interpreter (made once)."""
    ident = [interpreter.executable, interpreter.version, interpreter.free_threaded, wanted]
    key = hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:20]
    layer = user_cache_dir() / "build-env" / key

    def make(tmp: Path) -> object:
        pip = pip_for(python)
        _pip_install(pip, ["install", "--target", str(tmp), *wanted], env, log, deadline)
        return ident

    return made_once(layer, make)


def _pip_install(
    pip: list[str], args: list[str], env: Mapping[str, str], log: Path, deadline: float
) -> None:
    """pip install offline from the wheelhouse; fill the wheelhouse first if that fails."""
    wheelhouse = user_cache_dir() / "wheelhouse"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    offline = [*pip, *args[:1], *_QUIET, "--no-index", "--find-links", str(wheelhouse), *args[1:]]
    cwd = wheelhouse
    try:
        run_logged(offline, cwd=cwd, env=env, log=log, deadline=deadline, what="pip install")
        return
    except BuildFailure:
        pass
    requirements = [a for a in args[1:] if not a.startswith("-")]
    if "--target" in args:
        requirements.remove(args[args.index("--target") + 1])
    with locked(wheelhouse / ".lock"):  # cells share the folder
        fill = [*pip, "wheel", *_QUIET, "--wheel-dir", str(wheelhouse), *requirements]
        run_logged(
            fill, cwd=cwd, env=env, log=log, deadline=deadline, what="filling the wheelhouse"
        )
    run_logged(offline, cwd=cwd, env=env, log=log, deadline=deadline, what="pip install")


def _link_tree(src: Path, dest: Path) -> None:
    """Hard-link (or copy, across file systems) every file of `src` into `dest`."""
    for dirpath, _, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        if rel.parts[:1] == ("bin",):
            continue  # console scripts name the interpreter that made the layer
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            if name == ".complete":
                continue
            try:
                os.link(Path(dirpath) / name, dest / rel / name)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                    raise
                shutil.copy2(Path(dirpath) / name, dest / rel / name)
