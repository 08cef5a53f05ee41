"""The project's version, for `relforge init`, from every common source, most trusted first:
`version.txt` (what `relforge build` and `relforge release` read); a static `[project]
version`; setuptools' `dynamic = ["version"]` (`[tool.setuptools.dynamic] version = {attr =
"pkg.__version__"}` read with `ast` from the module's file, never imported, or `{file =
"VERSION"}`); setup.py's `version="…"` / `__version__ = "…"` and setup.cfg's `[metadata]
version` (`attr:`, `file:`); and for setuptools-scm, hatch-vcs and versioningit the newest
version tag in git, whose next patch release it is.  Every version is written with three release
parts (`pad_release`: 1.23 → 1.23.0).  The newest version tag is looked up in any case (in the
repository whose top the project is), so a version below a release already tagged is named."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from relforge.errors import ConfigError, Span
from relforge.git import GitMissing, run_git
from relforge.init.setupfiles import SETUP_CFG, SETUP_PY, SetupFacts, module_strings
from relforge.versiontags import newest_tag, pad_release

VERSION_FILE = "version.txt"
PYPROJECT = "pyproject.toml"
_VCS_BACKENDS = {
    "setuptools-scm": "setuptools-scm",
    "hatch-vcs": "hatch-vcs",
    "versioningit": "versioningit",
}


@dataclass(frozen=True, kw_only=True)
class FoundVersion:
    """The version init writes (None: no source states one), where it came from, and the
    newest version tag of the repository."""

    version: Version | None
    source: str  # "version.txt", "pyproject.toml", "git tag v1.2.3 (setuptools-scm; …)", …
    vcs: str = ""  # setuptools-scm, hatch-vcs, versioningit: the version comes from git tags
    tag: tuple[str, Version] | None = None  # the newest version tag (name, version)
    notes: tuple[str, ...] = ()


def find_version(root: Path, data: dict[str, Any], setup: SetupFacts) -> FoundVersion:
    """The project's version in `root` (`data`: pyproject.toml, parsed)."""
    vcs = vcs_backend(data)
    tag = _newest_tag(root, any_repository=bool(vcs))
    version, source, notes = _stated(root, data, setup)
    if version is None and vcs:
        if tag is None:
            notes.append(f"{vcs} takes the version from git tags, and there is no version tag")
        else:
            name, tagged = tag
            version = _after(tagged)
            source = f"git tag {name} ({vcs}; the next release after it)"
    elif vcs and version is not None:
        notes.append(f"{vcs} is configured, but {source} states the version: that one is used")
    return FoundVersion(
        version=pad_release(version) if version is not None else None,
        source=source,
        vcs=vcs,
        tag=tag,
        notes=tuple(notes),
    )


def vcs_backend(data: dict[str, Any]) -> str:
    """The git-tag version plugin the project uses ("" for none)."""
    tool = _table(data, "tool")
    if "setuptools_scm" in tool or "setuptools-scm" in tool:
        return "setuptools-scm"
    if _table(_table(tool, "hatch"), "version").get("source") == "vcs":
        return "hatch-vcs"
    if "versioningit" in tool:
        return "versioningit"
    for text in build_requires(data):
        try:
            name = canonicalize_name(Requirement(text).name)
        except InvalidRequirement:
            continue
        if name in _VCS_BACKENDS:
            return _VCS_BACKENDS[name]
    return ""


def build_requires(data: dict[str, Any]) -> list[str]:
    """`[build-system] requires`, the strings only."""
    requires = _table(data, "build-system").get("requires", [])
    return [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []


def _stated(
    root: Path, data: dict[str, Any], setup: SetupFacts
) -> tuple[Version | None, str, list[str]]:
    notes: list[str] = []
    version_file = root / VERSION_FILE
    if version_file.is_file():
        text = _read(version_file)
        return parse_version(text, Span(str(version_file), 1, 1), VERSION_FILE), VERSION_FILE, notes
    project = _table(data, "project")
    static = project.get("version", "")
    if isinstance(static, str) and static.strip():
        where = key_span(root / PYPROJECT, "version")
        return parse_version(static.strip(), where, "project.version"), PYPROJECT, notes
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "version" in dynamic:
        spec = _table(_table(_table(data, "tool"), "setuptools"), "dynamic").get("version")
        if isinstance(spec, dict):
            found = _from_spec(root, spec, setup, "[tool.setuptools.dynamic] version", notes)
            if found is not None:
                return (*found, notes)
    if setup.version:
        where = setup.version_at or Span(str(root / SETUP_PY))
        source = Path(where.file).name if where.file else SETUP_PY
        return parse_version(setup.version, where, "version"), source, notes
    if setup.version_attr or setup.version_file:
        spec = {"attr": setup.version_attr} if setup.version_attr else {"file": setup.version_file}
        found = _from_spec(root, spec, setup, f"{SETUP_CFG} [metadata] version", notes)
        if found is not None:
            return (*found, notes)
    return None, "", notes


def _from_spec(
    root: Path, spec: dict[str, Any], setup: SetupFacts, what: str, notes: list[str]
) -> tuple[Version, str] | None:
    """`{attr = "pkg.__version__"}` or `{file = "VERSION"}` (a list of files: the first)."""
    attr, file = spec.get("attr"), spec.get("file")
    if isinstance(file, list):
        file = file[0] if file and isinstance(file[0], str) else None
    if isinstance(file, str):
        named = root / file
        if not named.is_file():
            notes.append(f"{what} names {file}, which is not there")
            return None
        return parse_version(_read(named), Span(str(named), 1, 1), what), f"{file} ({what})"
    if isinstance(attr, str) and "." in attr:
        module, name = attr.rsplit(".", 1)
        path = module_file(root, module, setup.package_dirs)
        if path is None:
            notes.append(f"{what} names {attr}, and no file of module {module} was found")
            return None
        value = _module_string(path, name)
        shown = path.relative_to(root).as_posix()
        if value is None:
            notes.append(f"{what} names {attr}: {shown} assigns it no literal string")
            return None
        return parse_version(value, Span(str(path)), what), f"{shown} ({what} = attr {attr})"
    return None


def module_file(root: Path, module: str, package_dirs: tuple[str, ...] = ()) -> Path | None:
    """The file of `module` (dotted) under `root`, `root/src` or a package_dir."""
    parts = module.split(".")
    for base in (*package_dirs, "src", "."):
        folder = root / base
        for candidate in (
            folder.joinpath(*parts, "__init__.py"),
            folder.joinpath(*parts[:-1], f"{parts[-1]}.py"),
        ):
            if candidate.is_file():
                return candidate
    return None


def _module_string(path: Path, name: str) -> str | None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return module_strings(tree).get(name)


def _after(tagged: Version) -> Version:
    """What the next build after a tag is for: an RC's final, a final's next patch release."""
    if tagged.is_prerelease:
        return Version(tagged.base_version)
    major, minor, micro = pad_release(Version(tagged.base_version)).release[:3]
    return Version(f"{major}.{minor}.{micro + 1}")


def _newest_tag(root: Path, *, any_repository: bool) -> tuple[str, Version] | None:
    """The newest version tag of the git repository `root` is the top of (any repository
    holding `root` when `any_repository`: its versions come from tags)."""
    try:
        top = run_git("-C", str(root), "rev-parse", "--show-toplevel")
        if top.code != 0:
            return None
        if not any_repository and Path(top.out.strip()).resolve() != root.resolve():
            return None  # a project inside another repository: that one's tags are not its own
        tags = run_git("-C", str(root), "tag", "--list")
    except (GitMissing, OSError):
        return None
    return newest_tag(tags.out.split()) if tags.code == 0 else None


def parse_version(text: str, where: Span, key: str) -> Version:
    try:
        return Version(text.strip())
    except InvalidVersion:
        raise ConfigError(
            f"{text.strip()!r} is not a version (PEP 440)",
            where=where,
            key=key,
            hint="e.g. 1.2.0a0",
        ) from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read it: {exc}", where=Span(str(path))) from None


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    return value if isinstance(value, dict) else {}


def key_span(path: Path, key: str) -> Span:
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
