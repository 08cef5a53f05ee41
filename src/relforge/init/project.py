"""What `relforge init` learns about the project in a directory: its distribution name, the
Python range it supports (`pyproject.toml`, PEP 621) and its version (`version.txt` first, as
`relforge build` and `relforge release` read it, then `[project] version`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidName, canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.builders.compat import tomllib
from relforge.errors import ConfigError, EnvironmentFault, Span, UsageError

PYPROJECT = "pyproject.toml"
VERSION_FILE = "version.txt"
# tomllib names the place in its message only (attributes came in Python 3.14).
_TOML_PLACE = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True, kw_only=True)
class ProjectFacts:
    """The facts a starter matrix is made from, each with where it came from."""

    name: str
    name_from: str  # "pyproject.toml", "--name" or "the directory name"
    requires_python: SpecifierSet | None
    requires_python_at: Span | None  # pyproject.toml:line of requires-python
    version: Version | None
    version_from: str  # "version.txt", "pyproject.toml" or ""


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
    if name is not None:
        chosen, source, key = name, "--name", "--name"
    elif given:
        chosen, source, key = given, PYPROJECT, "project.name"
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
    version, version_from = _version(root, project, pyproject)
    return ProjectFacts(
        name=chosen,
        name_from=source,
        requires_python=_requires_python(project, pyproject),
        requires_python_at=_key_span(pyproject, "requires-python") if pyproject.is_file() else None,
        version=version,
        version_from=version_from,
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
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigError(
            f"{text!r} is not a version specifier (PEP 440)",
            where=_key_span(path, "requires-python"),
            key="project.requires-python",
            hint='write it like ">=3.10" or ">=3.10,<3.14"',
        ) from None


def _version(root: Path, project: dict[str, Any], pyproject: Path) -> tuple[Version | None, str]:
    version_file = root / VERSION_FILE
    if version_file.is_file():
        try:
            text = version_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read it: {exc}", where=Span(str(version_file))) from None
        return _parse(text, Span(str(version_file), 1, 1), VERSION_FILE), VERSION_FILE
    text = _text(project, "version", pyproject)
    if text:
        where = _key_span(pyproject, "version")
        return _parse(text, where, "project.version"), PYPROJECT
    return None, ""


def _parse(text: str, where: Span, key: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ConfigError(
            f"{text!r} is not a version (PEP 440)", where=where, key=key, hint="e.g. 1.2.0a0"
        ) from None


def _key_span(path: Path, key: str) -> Span:
    """file:line of the first line assigning `key` (tomllib keeps no positions); the file
    alone when it cannot be found."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return Span(str(path))
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith((f"{key} ", f"{key}=", f"[{key}]")):
            return Span(str(path), number, line.index(key[0]) + 1)
    return Span(str(path))
