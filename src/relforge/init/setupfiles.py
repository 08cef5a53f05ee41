"""setup.py and setup.cfg read statically, for `relforge init`: setup.py is parsed with `ast`,
never run, and only literal strings (or a module-level name bound to one) count; setup.cfg is
read with configparser.  What a project states there: its version, `python_requires`, packages,
extension modules (and whether they use the limited API), `[bdist_wheel] py_limited_api`."""

from __future__ import annotations

import ast
import configparser
from dataclasses import dataclass, field
from pathlib import Path

from relforge.errors import ConfigError, Span

SETUP_PY = "setup.py"
SETUP_CFG = "setup.cfg"


@dataclass(frozen=True, kw_only=True)
class Extension:
    """One `…Extension(...)` call (Extension, CppExtension, CUDAExtension, Pybind11Extension)."""

    kind: str  # the called name
    module: str  # "torch_muladd._C"; "" when not a literal
    limited_api: bool  # py_limited_api=True


@dataclass(frozen=True, kw_only=True)
class SetupFacts:
    """What setup.py and setup.cfg state literally (empty strings: they state nothing)."""

    name: str = ""
    name_from: str = ""
    version: str = ""
    version_at: Span | None = None
    version_attr: str = ""  # setup.cfg `version = attr: pkg.__version__`
    version_file: str = ""  # setup.cfg `version = file: VERSION`
    python_requires: str = ""
    python_requires_at: Span | None = None
    packages: tuple[str, ...] = ()
    package_dirs: tuple[str, ...] = ()  # package_dir={"": "src"} → ("src",)
    extensions: tuple[Extension, ...] = ()
    py_limited_api: str = ""  # "cp39": [bdist_wheel] py_limited_api (setup.cfg or setup.py)
    py_limited_api_from: str = ""
    imports: frozenset[str] = field(default_factory=frozenset)  # top-level modules setup.py imports


def read_setup(root: Path) -> SetupFacts:
    """setup.py's facts, with setup.cfg's where setup.py states none."""
    py = _read_setup_py(root / SETUP_PY) if (root / SETUP_PY).is_file() else SetupFacts()
    cfg = _read_setup_cfg(root / SETUP_CFG) if (root / SETUP_CFG).is_file() else SetupFacts()
    return SetupFacts(
        name=py.name or cfg.name,
        name_from=py.name_from if py.name else cfg.name_from,
        version=py.version or cfg.version,
        version_at=py.version_at if py.version else cfg.version_at,
        version_attr=cfg.version_attr if not py.version else "",
        version_file=cfg.version_file if not py.version else "",
        python_requires=py.python_requires or cfg.python_requires,
        python_requires_at=py.python_requires_at if py.python_requires else cfg.python_requires_at,
        packages=py.packages or cfg.packages,
        package_dirs=py.package_dirs or cfg.package_dirs,
        extensions=py.extensions,
        py_limited_api=py.py_limited_api or cfg.py_limited_api,
        py_limited_api_from=py.py_limited_api_from or cfg.py_limited_api_from,
        imports=py.imports,
    )


def _read_setup_py(path: Path) -> SetupFacts:
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return SetupFacts()  # not ours to judge: the build will say what is wrong with it
    names = module_strings(tree)
    imports: set[str] = set()
    extensions: list[Extension] = []
    keywords: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call):
            called = _called_name(node.func)
            if called == "setup":
                keywords.update({k.arg: k.value for k in node.keywords if k.arg})
            elif called.endswith("Extension"):
                extensions.append(_extension(called, node, names))
    version_node = keywords.get("version")
    version = _literal(version_node, names) if version_node is not None else ""
    if not version and "version" not in keywords:
        version = names.get("__version__", "")
    requires_node = keywords.get("python_requires")
    limited = _bdist_wheel_option(keywords.get("options"), names)
    name = _literal(keywords.get("name"), names)
    return SetupFacts(
        name=name,
        name_from=SETUP_PY if name else "",
        version=version,
        version_at=Span(str(path), version_node.lineno, version_node.col_offset + 1)
        if version and version_node is not None
        else (Span(str(path)) if version else None),
        python_requires=_literal(requires_node, names) if requires_node is not None else "",
        python_requires_at=Span(str(path), requires_node.lineno, requires_node.col_offset + 1)
        if requires_node is not None
        else None,
        packages=_strings(keywords.get("packages"), names),
        package_dirs=_package_dirs(keywords.get("package_dir"), names),
        extensions=tuple(extensions),
        py_limited_api=limited,
        py_limited_api_from=f"{SETUP_PY} options bdist_wheel" if limited else "",
        imports=frozenset(imports),
    )


def module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "literal"` assignments (also annotated ones)."""
    found: dict[str, str] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = value.value
    return found


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _literal(node: ast.expr | None, names: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip()
    if isinstance(node, ast.Name):
        return names.get(node.id, "").strip()
    return ""


def _strings(node: ast.expr | None, names: dict[str, str]) -> tuple[str, ...]:
    if isinstance(node, ast.List | ast.Tuple):
        return tuple(s for e in node.elts if (s := _literal(e, names)))
    return ()


def _package_dirs(node: ast.expr | None, names: dict[str, str]) -> tuple[str, ...]:
    if not isinstance(node, ast.Dict):
        return ()
    return tuple(
        s
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and k.value == "" and (s := _literal(v, names))
    )


def _extension(kind: str, call: ast.Call, names: dict[str, str]) -> Extension:
    named = {k.arg: k.value for k in call.keywords if k.arg}
    module = _literal(call.args[0] if call.args else named.get("name"), names)
    limited = named.get("py_limited_api")
    return Extension(
        kind=kind,
        module=module,
        limited_api=isinstance(limited, ast.Constant) and limited.value is True,
    )


def _bdist_wheel_option(node: ast.expr | None, names: dict[str, str]) -> str:
    """options={"bdist_wheel": {"py_limited_api": "cp39"}}."""
    if not isinstance(node, ast.Dict):
        return ""
    for key, value in zip(node.keys, node.values, strict=True):
        if _literal(key, names) == "bdist_wheel" and isinstance(value, ast.Dict):
            for inner_key, inner in zip(value.keys, value.values, strict=True):
                if _literal(inner_key, names) in ("py_limited_api", "py-limited-api"):
                    return _literal(inner, names)
    return ""


def _read_setup_cfg(path: Path) -> SetupFacts:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"), source=str(path))
    except (OSError, UnicodeDecodeError):
        return SetupFacts()
    except configparser.Error as exc:
        raise ConfigError(
            f"not a valid setup.cfg: {str(exc).splitlines()[0]}",
            where=Span(str(path)),
            hint="fix the file (relforge reads [metadata] version and [options] python_requires)",
        ) from None
    version = parser.get("metadata", "version", fallback="").strip()
    attr = version.removeprefix("attr:").strip() if version.startswith("attr:") else ""
    file = version.removeprefix("file:").strip() if version.startswith("file:") else ""
    requires = parser.get("options", "python_requires", fallback="").strip()
    limited = parser.get("bdist_wheel", "py_limited_api", fallback="").strip()
    name = parser.get("metadata", "name", fallback="").strip()
    packages = parser.get("options", "packages", fallback="").split()
    package_dir = parser.get("options", "package_dir", fallback="")
    dirs = tuple(
        line.split("=", 1)[1].strip()
        for line in package_dir.splitlines()
        if "=" in line and not line.split("=", 1)[0].strip()
    )
    return SetupFacts(
        name=name,
        name_from=SETUP_CFG if name else "",
        version="" if attr or file else version,
        version_at=_line_of(path, "version") if version else None,
        version_attr=attr,
        version_file=file,
        python_requires=requires,
        python_requires_at=_line_of(path, "python_requires") if requires else None,
        packages=tuple(p for p in packages if not p.startswith(("find:", "find_namespace:"))),
        package_dirs=dirs,
        py_limited_api=limited,
        py_limited_api_from=f"{SETUP_CFG} [bdist_wheel]" if limited else "",
    )


def _line_of(path: Path, key: str) -> Span:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return Span(str(path))
    for number, line in enumerate(lines, start=1):
        if line.split("=", 1)[0].strip() == key:
            return Span(str(path), number, 1)
    return Span(str(path))
