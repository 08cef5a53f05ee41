"""What `relforge init` learns about the project in a directory: its distribution name, the
Python range it supports (`pyproject.toml`, PEP 621; else setup.py's or setup.cfg's
`python_requires`), its version (relforge.init.projectversion: version.txt, pyproject.toml,
setuptools' dynamic version, setup.py, setup.cfg, git tags) and how it builds
(relforge.init.features: import name, abi3, torch/numpy in the build requirements)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidName, canonicalize_name
from packaging.version import Version

from relforge.errors import ConfigError, EnvironmentFault, Span, UsageError
from relforge.init.features import BuildFacts, read_build
from relforge.init.projectversion import PYPROJECT, VERSION_FILE, find_version, key_span
from relforge.init.setupfiles import read_setup
from relforge.tomlcompat import tomllib

__all__ = ["PYPROJECT", "VERSION_FILE", "ProjectFacts", "read_project"]
# tomllib names the place in its message only (attributes came in Python 3.14).
_TOML_PLACE = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True, kw_only=True)
class ProjectFacts:
    """The facts a starter matrix is made from, each with where it came from."""

    name: str
    name_from: str  # "pyproject.toml", "--name" or "the directory name"
    requires_python: SpecifierSet | None
    requires_python_at: Span | None  # pyproject.toml:line of requires-python
    requires_python_from: str = PYPROJECT  # or "setup.py", "setup.cfg"
    version: Version | None  # X.Y.Z at least (1.23 is read as 1.23.0)
    version_from: str  # "version.txt", "pyproject.toml", "git tag v1.2.3 (…)" or ""
    vcs: str = ""  # setuptools-scm, hatch-vcs, versioningit
    newest_tag: tuple[str, Version] | None = None  # the repository's newest version tag
    build: BuildFacts | None = None
    notes: tuple[str, ...] = ()  # what reading the sources found worth saying


def read_project(root: Path, name: str | None = None) -> ProjectFacts:
    """The project in `root`; `name` (--name) wins over pyproject.toml and the directory name.
    Messages name files as `root / "pyproject.toml"` (pass Path(".") for short names).

    A pyproject.toml that is not valid TOML, or whose name, requires-python or version is
    malformed, is a ConfigError naming file:line and the key."""
    pyproject = root / PYPROJECT
    data = _read_toml(pyproject) if pyproject.is_file() else {}
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ConfigError("[project] is not a table", where=_key_span(pyproject, "project"))
    given = _text(project, "name", pyproject)
    setup = read_setup(root)
    if name is not None:
        chosen, source, key = name, "--name", "--name"
    elif given:
        chosen, source, key = given, PYPROJECT, "project.name"
    elif setup.name:
        chosen, source, key = setup.name, setup.name_from, "name"
    else:
        chosen, source, key = root.resolve().name, "the directory name", "--name"
    try:
        canonicalize_name(chosen, validate=True)
    except InvalidName:
        error = UsageError if key == "--name" else ConfigError
        raise error(
            f"{chosen!r} ({source}) is not a valid distribution name",
            where=_key_span(pyproject, "name") if source == PYPROJECT else None,
            key=key,
            hint="pass --name NAME (letters, digits, and . _ - between them)",
        ) from None
    found = find_version(root, data, setup)
    spec = _requires_python(project, pyproject)
    spec_at = _key_span(pyproject, "requires-python") if pyproject.is_file() else None
    spec_from = PYPROJECT
    if spec is None and setup.python_requires:
        spec_at = setup.python_requires_at
        spec_from = Path(spec_at.file).name if spec_at is not None else "setup.py"
        spec = _specifier(setup.python_requires, spec_at, "python_requires", spec_from)
    return ProjectFacts(
        name=chosen,
        name_from=source,
        requires_python=spec,
        requires_python_at=spec_at,
        requires_python_from=spec_from,
        version=found.version,
        version_from=found.source,
        vcs=found.vcs,
        newest_tag=found.tag,
        build=read_build(root, data, setup, chosen),
        notes=found.notes,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", where=Span(str(path))) from None
    except OSError as exc:
        raise EnvironmentFault(
            f"cannot read it: {exc.strerror or exc}", where=Span(str(path))
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        place = _TOML_PLACE.search(message)
        line = getattr(exc, "lineno", None) or (int(place.group(1)) if place else 0)
        column = getattr(exc, "colno", None) or (int(place.group(2)) if place else 0)
        problem = _TOML_PLACE.sub("", getattr(exc, "msg", message)).strip()
        raise ConfigError(
            f"invalid TOML: {problem}",
            where=Span(str(path), line, column),
            hint="fix the file (relforge reads [project] name, requires-python and version)",
        ) from None


def _text(table: dict[str, Any], key: str, path: Path) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(
            f"expected a string, found {type(value).__name__}",
            where=_key_span(path, key),
            key=f"project.{key}",
        )
    return value.strip()


def _requires_python(project: dict[str, Any], path: Path) -> SpecifierSet | None:
    text = _text(project, "requires-python", path)
    if not text:
        return None
    where = _key_span(path, "requires-python")
    return _specifier(text, where, "project.requires-python", PYPROJECT)


def _specifier(text: str, where: Span | None, key: str, source: str) -> SpecifierSet:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigError(
            f"{text!r} is not a version specifier (PEP 440)",
            where=where,
            key=key,
            hint=f'write it like ">=3.10" or ">=3.10,<3.14" in {source}',
        ) from None


_key_span = key_span
