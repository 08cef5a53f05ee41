"""One name per idea, read from the source (nothing is imported): no two modules of relforge
share a file name, and no two public classes share a class name, unless ALLOWED says why the
two are the same idea (docs/glossary.md says which word means what).

A reader who meets `report.py` or `class Plan` should not have to ask "which one?".  The few
deliberate pairs are the CLI module of a command and the stage module that is that command's
whole plan (`relforge yank` in cli/yank.py and promote/plans/yank.py).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# name → the modules (dotted) that may share it, and why they are one idea
ALLOWED_MODULE_NAMES: Mapping[str, tuple[frozenset[str], str]] = {
    "publish": (
        frozenset({"relforge.cli.publish", "relforge.promote.plans.publish"}),
        "the `relforge publish` command: its options, and its plan",
    ),
    "yank": (
        frozenset({"relforge.cli.yank", "relforge.promote.plans.yank"}),
        "the `relforge yank` command: its options, and its plan",
    ),
}
ALLOWED_CLASS_NAMES: Mapping[str, tuple[frozenset[str], str]] = {}


def modules(src: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((src / "relforge").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            continue  # a package's front door is named by its package
        found[".".join(parts)] = path
    return found


def public_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    ]


def clashes(
    owners: Iterable[tuple[str, str]], allowed: Mapping[str, tuple[frozenset[str], str]]
) -> list[str]:
    """(name, owner) pairs → one line per name that more than one owner uses, unless allowed."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for name, owner in owners:
        by_name[name].add(owner)
    lines = []
    for name, users in sorted(by_name.items()):
        if len(users) < 2:
            continue
        ok, _ = allowed.get(name, (frozenset(), ""))
        if users <= ok:
            continue
        lines.append(f"  {name}: {', '.join(sorted(users))}")
    return lines


def test_no_two_modules_share_a_name() -> None:
    owners = [(dotted.rpartition(".")[2], dotted) for dotted in modules(SRC)]
    found = clashes(owners, ALLOWED_MODULE_NAMES)
    assert not found, (
        "modules that share a file name (rename one, or say in ALLOWED_MODULE_NAMES why they "
        "are one idea):\n" + "\n".join(found)
    )


def test_no_two_public_classes_share_a_name() -> None:
    owners = [
        (name, dotted) for dotted, path in modules(SRC).items() for name in public_classes(path)
    ]
    found = clashes(owners, ALLOWED_CLASS_NAMES)
    assert not found, (
        "public classes that share a name (give each its own, or say in ALLOWED_CLASS_NAMES "
        "why they are one idea):\n" + "\n".join(found)
    )


def test_every_allowance_is_still_needed() -> None:
    # an allowance for a pair that no longer exists would hide the next, unrelated clash
    present = set(modules(SRC))
    for name, (users, why) in {**ALLOWED_MODULE_NAMES, **ALLOWED_CLASS_NAMES}.items():
        assert why, name
        assert users <= present, f"{name}: {sorted(users - present)} no longer exist"


def test_a_clash_is_seen_and_an_allowed_pair_is_not(tmp_path: Path) -> None:
    for name in ("relforge/a/report.py", "relforge/b/report.py", "relforge/c/plan.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("class Plan:\n    pass\nclass _Hidden:\n    pass\n")
    found = modules(tmp_path)
    owners = [(d.rpartition(".")[2], d) for d in found]
    assert clashes(owners, {}) == ["  report: relforge.a.report, relforge.b.report"]
    allowed = {"report": (frozenset({"relforge.a.report", "relforge.b.report"}), "one idea")}
    assert clashes(owners, allowed) == []
    classes = [(c, d) for d, p in found.items() for c in public_classes(p)]
    assert clashes(classes, {}) == ["  Plan: relforge.a.report, relforge.b.report, relforge.c.plan"]


def shadowed_submodules(src: Path) -> list[str]:
    """Names a package's front door binds to something from another module than its submodule of
    that name: importing the submodule anywhere later (a test, a script run with -m) rebinds the
    package's attribute, and `from package import name` then hands out the module instead.  A
    function named like its own module (`from relforge.bot.dispatch import dispatch`) is safe:
    the submodule is imported first, then the name rebound."""
    found = []
    for init in sorted((src / "relforge").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(src).parts)
        submodules = {p.stem for p in init.parent.glob("*.py")} | {
            p.name for p in init.parent.iterdir() if (p / "__init__.py").is_file()
        }
        tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module != package:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if bound in submodules and node.module != f"{package}.{bound}":
                        found.append(f"  {package}: {bound} from {node.module}")
    return found


def test_no_front_door_binds_a_name_its_submodule_has() -> None:
    found = shadowed_submodules(SRC)
    assert not found, "front doors that export a name one of their submodules has:\n" + "\n".join(
        found
    )


def test_a_shadowed_submodule_is_seen(tmp_path: Path) -> None:
    room = tmp_path / "relforge" / "room"
    room.mkdir(parents=True)
    (room / "script.py").write_text("")
    (room / "tools.py").write_text("def script() -> None: ...\n")
    (room / "__init__.py").write_text("from relforge.room.tools import script\n")
    assert shadowed_submodules(tmp_path) == ["  relforge.room: script from relforge.room.tools"]
    (room / "script.py").write_text("def script() -> None: ...\n")
    (room / "__init__.py").write_text("from relforge.room.script import script\n")
    assert shadowed_submodules(tmp_path) == []
