"""What `relforge init` learns from how the project builds: the module it installs (its import
name), whether its wheels use the limited API (abi3: scikit-build-core's `wheel.py-api`,
setuptools' `py_limited_api`), and the dependencies it compiles against (torch, numpy in
`[build-system] requires`), which become dependency axes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from relforge.init.projectversion import PYPROJECT, build_requires
from relforge.init.setupfiles import SETUP_PY, SetupFacts

_CPYTHON_TAG = re.compile(r"^cp3(\d+)$")
# Folders with an __init__.py that are not what a project installs.
_NOT_PACKAGES = frozenset(
    {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks",
     "bench", "scripts", "tools", "build", "dist", "src", "ci", "tasks"}
)  # fmt: skip
# Compiled dependencies a wheel's ABI ties it to: each becomes a dependency axis.
AXIS_DEPENDENCIES = ("torch", "numpy")


@dataclass(frozen=True, kw_only=True)
class BuildFacts:
    """How the project builds, each fact with where it came from."""

    import_name: str  # "" when nothing names it
    import_name_from: str
    abi3: str  # the limited-API floor X.Y ("" for none)
    abi3_from: str
    compiled_against: tuple[str, ...]  # of AXIS_DEPENDENCIES, in that order
    compiled_against_from: str
    notes: tuple[str, ...] = ()


def default_import_name(name: str) -> str:
    """The module name `project.import_name` defaults to: lowercased, `-` and `.` as `_`."""
    return name.lower().replace("-", "_").replace(".", "_")


def read_build(root: Path, data: dict[str, Any], setup: SetupFacts, name: str) -> BuildFacts:
    notes: list[str] = []
    module, module_from = import_name(root, data, setup, name)
    abi3, abi3_from = limited_api(data, setup, notes)
    against, against_from = compiled_against(data, setup)
    return BuildFacts(
        import_name=module,
        import_name_from=module_from,
        abi3=abi3,
        abi3_from=abi3_from,
        compiled_against=against,
        compiled_against_from=against_from,
        notes=tuple(notes),
    )


def import_name(root: Path, data: dict[str, Any], setup: SetupFacts, name: str) -> tuple[str, str]:
    """The top-level module the project installs, and where that was found ("", "" when
    nothing says)."""
    tool = _table(data, "tool")
    candidates: list[tuple[list[str], str]] = []
    setuptools_packages = _table(tool, "setuptools").get("packages")
    if isinstance(setuptools_packages, list):
        candidates.append(
            (_top_level(setuptools_packages), f"[tool.setuptools] packages of {PYPROJECT}")
        )
    candidates.append((_top_level(setup.packages), f"packages of {SETUP_PY}"))
    skbuild = _table(_table(tool, "scikit-build"), "wheel").get("packages")
    if isinstance(skbuild, list):
        candidates.append(([_last(p) for p in skbuild if isinstance(p, str)],
                           "[tool.scikit-build] wheel.packages"))  # fmt: skip
    hatch = _table(_table(_table(_table(tool, "hatch"), "build"), "targets"), "wheel")
    if isinstance(hatch.get("packages"), list):
        candidates.append(([_last(p) for p in hatch["packages"] if isinstance(p, str)],
                           "[tool.hatch.build.targets.wheel] packages"))  # fmt: skip
    modules = [e.module.split(".")[0] for e in setup.extensions if e.module]
    candidates.append((modules, f"the extension modules of {SETUP_PY}"))
    found = _table(_table(_table(tool, "setuptools"), "packages"), "find").get("where")
    wheres = [w for w in found if isinstance(w, str)] if isinstance(found, list) else []
    for folder in (*wheres, *setup.package_dirs, "src"):
        candidates.append((_packages_in(root / folder), f"the packages in {folder}/"))
    candidates.append((_packages_in(root), "the packages in the project's folder"))
    default = default_import_name(name)
    for names, source in candidates:
        names = [n for n in names if n.isidentifier()]
        if names:
            return (default if default in names else names[0]), source
    return "", ""


def _top_level(packages: list[Any] | tuple[str, ...]) -> list[str]:
    return [p.split(".")[0] for p in packages if isinstance(p, str) and p]


def _last(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _packages_in(folder: Path) -> list[str]:
    try:
        entries = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    return [
        e.name
        for e in entries
        if e.is_dir() and e.name not in _NOT_PACKAGES and (e / "__init__.py").is_file()
    ]


def limited_api(data: dict[str, Any], setup: SetupFacts, notes: list[str]) -> tuple[str, str]:
    """The limited-API floor X.Y the build tags its wheels with, and where it is set."""
    tool = _table(data, "tool")
    py_api = _table(_table(tool, "scikit-build"), "wheel").get("py-api")
    if isinstance(py_api, str) and py_api:
        return _floor(py_api, "[tool.scikit-build] wheel.py-api", notes)
    distutils = _table(_table(tool, "distutils"), "bdist_wheel")
    tagged = distutils.get("py-limited-api") or distutils.get("py_limited_api")
    if isinstance(tagged, str) and tagged:
        return _floor(tagged, "[tool.distutils.bdist_wheel] py-limited-api", notes)
    if setup.py_limited_api:
        return _floor(setup.py_limited_api, setup.py_limited_api_from, notes)
    limited = [e.module or e.kind for e in setup.extensions if e.limited_api]
    if limited:
        notes.append(
            f"{', '.join(limited)} in {SETUP_PY} use the limited API (py_limited_api=True), but "
            "no [bdist_wheel] py_limited_api = cp3X tags the wheels abi3: one wheel per Python"
        )
    return "", ""


def _floor(tag: str, source: str, notes: list[str]) -> tuple[str, str]:
    found = _CPYTHON_TAG.match(tag.strip())
    if found is None:
        notes.append(f"{source} is {tag!r}, not a cp3X tag: no abi3 wheels written")
        return "", ""
    return f"3.{found.group(1)}", f"{source} = {tag.strip()}"


def compiled_against(data: dict[str, Any], setup: SetupFacts) -> tuple[tuple[str, ...], str]:
    """The AXIS_DEPENDENCIES the build compiles against: `[build-system] requires` (a project
    without one: what setup.py imports)."""
    requires = build_requires(data)
    if requires:
        names = set()
        for text in requires:
            try:
                names.add(canonicalize_name(Requirement(text).name))
            except InvalidRequirement:
                continue
        found = tuple(d for d in AXIS_DEPENDENCIES if d in names)
        return found, "[build-system] requires"
    found = tuple(d for d in AXIS_DEPENDENCIES if d in setup.imports)
    return found, f"imports of {SETUP_PY}"


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    return value if isinstance(value, dict) else {}
