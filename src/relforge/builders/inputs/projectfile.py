"""What relforge reads of the project it builds before building it: pyproject.toml's
[build-system] (requirements, backend, backend-path, with PEP 517's defaults for a project
without one) and versioneer's `parentdir_prefix` (setup.cfg or pyproject.toml)."""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relforge.builders.control import BuildFailure
from relforge.tomlcompat import tomllib

PYPROJECT = "pyproject.toml"
PEP518_DEFAULT = ("setuptools>=40.8.0",)  # what a project without [build-system] gets
LEGACY_BACKEND = "setuptools.build_meta:__legacy__"  # PEP 517: no build-backend key


@dataclass(frozen=True, kw_only=True)
class BuildSystem:
    requires: tuple[str, ...]
    backend: str  # "module.path:object"
    backend_path: tuple[str, ...] = ()  # in-tree backend folders, relative to the source


def build_system(source: Path) -> BuildSystem:
    """The project's [build-system]; BuildFailure (the cell fails) when it is malformed."""
    data = _pyproject(source)
    system = data.get("build-system", {})
    if not isinstance(system, dict):
        raise BuildFailure(f"{PYPROJECT}: [build-system] is not a table")
    requires = system.get("requires", list(PEP518_DEFAULT))
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise BuildFailure(f"{PYPROJECT}: [build-system].requires is not a list of strings")
    backend = system.get("build-backend", LEGACY_BACKEND)
    paths = system.get("backend-path", [])
    if not isinstance(backend, str) or not backend:
        raise BuildFailure(f"{PYPROJECT}: [build-system].build-backend is not a string")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise BuildFailure(f"{PYPROJECT}: [build-system].backend-path is not a list of strings")
    return BuildSystem(requires=tuple(requires), backend=backend, backend_path=tuple(paths))


def versioneer_prefix(source: Path) -> str | None:
    """versioneer's `parentdir_prefix` (it reads the version from the name of the folder the
    source sits in, `<prefix><version>`, when git cannot tell), or None."""
    tool = _pyproject(source).get("tool", {})
    section = tool.get("versioneer") if isinstance(tool, dict) else None
    if isinstance(section, dict) and isinstance(section.get("parentdir_prefix"), str):
        return str(section["parentdir_prefix"]) or None
    cfg = source / "setup.cfg"
    if not cfg.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(cfg, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise BuildFailure(f"cannot read setup.cfg: {exc}") from None
    prefix = parser.get("versioneer", "parentdir_prefix", fallback="").strip().strip("\"'")
    return prefix or None


def _pyproject(source: Path) -> dict[str, Any]:
    path = source / PYPROJECT
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BuildFailure(f"cannot read {PYPROJECT}: {exc}") from None
